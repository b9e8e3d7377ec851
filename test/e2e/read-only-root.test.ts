/**
 * The built tree (as `npm run build` makes it and the image ships it: dist/, bin/, proto/, package.json,
 * node_modules) run as uid 65534 with the whole root file system read-only, as Envoy Gateway runs its rate-limit
 * pod (runAsUser 65534, readOnlyRootFilesystem): a private mount namespace (`unshare -m`) in which / is remounted
 * read-only, with one small tmpfs as the only writable place (TMPDIR). The service starts, decides, serves
 * /healthcheck and Prometheus on PROMETHEUS_ADDR, stops cleanly and logs no write error (a write anywhere but the
 * tmpfs would fail with EROFS).
 * Needs root (to make the namespace) and util-linux's unshare and setpriv: skipped with the reason otherwise.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { onPath } from '../support/envoy.js';
import { eventually } from '../support/eventually.js';
import { freePort } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';

const ROOT = join(import.meta.dirname, '../..');
const why =
  process.platform !== 'linux'
    ? 'not Linux'
    : process.getuid?.() !== 0
      ? 'not root (a mount namespace needs CAP_SYS_ADMIN)'
      : onPath('unshare') === undefined || onPath('setpriv') === undefined
        ? 'unshare or setpriv (util-linux) missing'
        : undefined;
if (why !== undefined) console.warn(`skipping the read-only root test: ${why}`);

(why === undefined ? describe : describe.skip)(`the built tree as uid 65534 on a read-only root${why === undefined ? '' : ` [skipped: ${why}]`}`, () => {
  const tree = mkdtempSync(join(tmpdir(), 'rl-ro-'));
  afterAll(() => rmSync(tree, { recursive: true, force: true }));

  it('starts, decides, answers /healthcheck and Prometheus, stops, and writes nothing', async () => {
    chmodSync(tree, 0o755); // mkdtemp makes it 0700: uid 65534 must be able to read the tree
    // The build, into the tree (what `npm run build` does, somewhere else than dist/).
    const tsc = spawnSync(
      process.execPath,
      [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(tree, 'dist')],
      { encoding: 'utf8', timeout: 120_000 },
    );
    expect(tsc.status, `${tsc.stdout}${tsc.stderr}`).toBe(0);
    cpSync(join(ROOT, 'src/storage/redis/lua'), join(tree, 'dist/storage/redis/lua'), { recursive: true });
    cpSync(join(ROOT, 'bin'), join(tree, 'bin'), { recursive: true });
    cpSync(join(ROOT, 'proto'), join(tree, 'proto'), { recursive: true });
    cpSync(join(ROOT, 'package.json'), join(tree, 'package.json'));
    symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(tree, 'node_modules'));
    mkdirSync(join(tree, 'rules'));
    writeFileSync(join(tree, 'rules/quota.yaml'), 'domain: ro\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 1}\n');
    const tmp = join(tree, 'tmp');
    mkdirSync(tmp);
    // The Node running the suite, where uid 65534 can run it (the pinned one sits in root's cache directory).
    const node = join(tree, 'node');
    cpSync(process.execPath, node);
    chmodSync(node, 0o755);

    const [grpc, http, prom] = [await freePort(), await freePort(), await freePort()];
    const env = {
      PATH: '/usr/local/bin:/usr/bin:/bin',
      HOME: '/nonexistent',
      TMPDIR: tmp,
      NODE_ENV: 'production',
      CONFIG_DIR: join(tree, 'rules'),
      GRPC_HOST: '127.0.0.1',
      GRPC_PORT: String(grpc),
      HOST: '127.0.0.1',
      PORT: String(http),
      USE_PROMETHEUS: 'true',
      PROMETHEUS_ADDR: `127.0.0.1:${prom}`,
      LOG_FORMAT: 'json',
      SHUTDOWN_DRAIN_MS: '0',
    };
    const script = [
      'mount -o remount,bind,ro / || exit 90',
      `mount -t tmpfs -o size=8m,mode=1777 tmpfs '${tmp}' || exit 91`,
      `cd '${tree}'`,
      `exec setpriv --reuid 65534 --regid 65534 --clear-groups '${node}' bin/ratelimit.mjs serve`,
    ].join(' && ');
    const child = spawn('unshare', ['-m', '--propagation', 'private', 'sh', '-c', script], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    child.stderr.on('data', (c: Buffer) => void (log += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const client = new RlsTestClient(`127.0.0.1:${grpc}`);
    try {
      await eventually(() => log.includes('ratelimit-sidecar started') || child.exitCode !== null, { timeoutMs: 30_000, what: 'the start line' });
      expect(child.exitCode, log).toBeNull();
      // The process runs as 65534 and sees / read-only (its own /proc entries say so).
      const pid = await childPid(child.pid!);
      expect(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]).toBe('65534');
      const rootMount = readFileSync(`/proc/${pid}/mountinfo`, 'utf8')
        .split('\n')
        .find((l) => l.split(' ')[4] === '/');
      expect(rootMount?.split(' ')[5]).toMatch(/^ro\b/);
      expect([(await client.ask('ro', [[['k', 'a']]], 1)).overall_code, (await client.ask('ro', [[['k', 'a']]], 1)).overall_code]).toEqual([
        'OK',
        'OVER_LIMIT',
      ]);
      expect((await fetch(`http://127.0.0.1:${http}/healthcheck`)).status).toBe(200);
      expect(await (await fetch(`http://127.0.0.1:${prom}/metrics`)).text()).toContain('ratelimit_decisions_total');
    } finally {
      client.close();
      child.kill('SIGTERM');
    }
    expect(await exited, log).toBe(0);
    expect(log).not.toMatch(/EROFS|read-only file system|EACCES/i);
    expect(log).not.toMatch(/"level":"(error|fatal)"/);
  }, 150_000);
});

/** Node's main thread names itself MainThread (Node 24); `node` is its executable's name. */
const isNode = (pid: number) => ['node', 'MainThread'].includes(readFileSync(`/proc/${pid}/comm`, 'utf8').trim());

/** The pid of the node process: setpriv execs in place of sh, which execs in place of unshare's child. */
async function childPid(unsharePid: number): Promise<number> {
  let pid = unsharePid;
  await eventually(
    () => {
      if (isNode(unsharePid)) return true;
      const children = readFileSync(`/proc/${unsharePid}/task/${unsharePid}/children`, 'utf8').trim();
      if (children === '') return false;
      pid = Number(children.split(' ')[0]);
      return isNode(pid);
    },
    { timeoutMs: 5_000, what: 'the node process' },
  );
  return isNode(unsharePid) ? unsharePid : pid;
}

/**
 * What `npm run build` (scripts/bundle.ts) makes of dist/, built into a tree of its own, as the image runs it
 * (`node --max-semi-space-size=16 dist/cli.js`):
 *   - dist/cli.js runs as a CommonJS script: the ES module loader is never started, while dist/capacity-client/ (the
 *     `./client` export) and the other folders stay ES modules;
 *   - built-ins that a start does not need (zlib, https, dns, ...) are not loaded, and those stood in for still
 *     work where they are used: WORKERS=2 (node:cluster, child processes) serves decisions;
 *   - the heap keeps the V8 heap sizes given on the command line: a young generation capped at 2 MiB semi-spaces
 *     stays at 4 MiB under allocation, where V8's default would grow it to 32 MiB;
 *   - the bundle's own code cache is used whatever heap sizes are given.
 */
import { execFile, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decide } from '../../bench/lib/footprint.js';
import { eventually } from '../support/eventually.js';
import { encodeRequest } from '../support/raw-rls.js';
import { freePort, startRedis } from '../support/redis.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');

describe('the bundled dist/cli.js', () => {
  const tree = mkdtempSync(join(tmpdir(), 'rl-bundle-start-'));
  const probe = join(tree, 'probe.cjs');
  const rules = join(tree, 'rules');
  afterAll(() => rmSync(tree, { recursive: true, force: true }));

  beforeAll(async () => {
    for (const p of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'src', 'scripts/bundle.ts'])
      cpSync(join(ROOT, p), join(tree, p), { recursive: true });
    symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(tree, 'node_modules'));
    await run('npm', ['run', 'build'], { cwd: tree, timeout: 170_000 });
    cpSync(join(ROOT, 'bench/rules'), rules, { recursive: true });
    // Preloaded (-r): at exit, the built-ins loaded and, under PROBE_HEAP, the largest young generation seen
    // while allocating objects that survive a few scavenges.
    writeFileSync(
      probe,
      `
process.on('exit', () => {
  const out = { modules: process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice(13)) };
  if (process.env.PROBE_HEAP) {
    const v8 = require('node:v8');
    let keep = [];
    out.newSpace = 0;
    for (let i = 0; i < 2e6; i++) {
      keep.push({ i });
      if (keep.length > 100000) keep = [];
      if (i % 5000 === 0) out.newSpace = Math.max(out.newSpace, v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size);
    }
  }
  require('node:fs').writeSync(2, '\\nPROBE ' + JSON.stringify(out) + '\\n');
});
`,
    );
  }, 180_000);

  const probed = async (flags: string[], args: string[], env: Record<string, string> = {}) => {
    const { stdout, stderr } = await run(process.execPath, [...flags, '-r', probe, join(tree, 'dist/cli.js'), ...args], {
      cwd: tree,
      env: { ...process.env, NODE_OPTIONS: '', ...env },
      timeout: 60_000,
    });
    const line = stderr.split('\n').find((l) => l.startsWith('PROBE '));
    expect(line, stderr).toBeDefined();
    return { stdout, probe: JSON.parse(line!.slice(6)) as { modules: string[]; newSpace?: number } };
  };

  it('runs as CommonJS, without the ES module loader; its folders stay ES modules', async () => {
    expect(JSON.parse(readFileSync(join(tree, 'dist/package.json'), 'utf8'))).toEqual({ type: 'commonjs' });
    for (const dir of ['capacity-client', 'config', 'app'])
      expect(JSON.parse(readFileSync(join(tree, 'dist', dir, 'package.json'), 'utf8'))).toEqual({ type: 'module' });
    const { stdout, probe } = await probed(['--max-semi-space-size=16'], ['check', rules]);
    expect(stdout).toMatch(/bench/);
    // (Node loads the loader's resolver and translators for every entry; the module jobs are what an ES module entry needs)
    expect(probe.modules.filter((m) => m === 'internal/modules/esm/module_job')).toEqual([]);
    // The `./client` export, an ES module, loads by the package's name from the tree.
    const client = await run(
      process.execPath,
      ['--input-type=module', '-e', "const m = await import('ratelimit-sidecar/client'); console.log(typeof m.CapacityClient)"],
      { cwd: tree },
    );
    expect(client.stdout.trim()).toBe('function');
  }, 60_000);

  it('loads no built-in that the start does not need', async () => {
    const { probe } = await probed(['--max-semi-space-size=16'], ['check', rules]);
    expect(probe.modules).toContain('http2');
    expect(probe.modules.filter((m) => ['zlib', 'https', 'dns'].includes(m))).toEqual([]);
  }, 60_000);

  it('serves decisions with WORKERS=2 (node:cluster)', async () => {
    const redis = await startRedis();
    const [grpc, http] = [await freePort(), await freePort()];
    const env = {
      ...process.env,
      NODE_OPTIONS: '',
      WORKERS: '2',
      BACKEND: 'redis',
      REDIS_URL: redis.url,
      CONFIG_DIR: rules,
      GRPC_HOST: '127.0.0.1',
      GRPC_PORT: String(grpc),
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(http),
      SHUTDOWN_DRAIN_MS: '0',
    };
    const child = spawn(process.execPath, ['--max-semi-space-size=16', join(tree, 'dist/cli.js'), 'serve'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    child.stderr.on('data', (c: Buffer) => void (log += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const body = encodeRequest('bench', [{ entries: [['user', 'alice']] }]);
      // OK or OVER_LIMIT: a decision, made by a worker
      await eventually(async () => [1, 2].includes((await decide(grpc, body, 500)) ?? 0), { timeoutMs: 20_000, what: 'a decision' });
    } finally {
      child.kill('SIGTERM');
      expect(await exited, log).toBe(0);
      await redis.stop();
    }
    expect(log).not.toMatch(/fatal|TypeError/);
  }, 60_000);

  it('keeps the heap sizes given on the command line', async () => {
    const capped = await probed(['--max-semi-space-size=2'], ['--version'], { PROBE_HEAP: '1' });
    expect(capped.stdout).toMatch(/^ratelimit-sidecar /);
    expect(capped.probe.newSpace).toBeLessThanOrEqual(4 * 2 ** 20);
    const large = await probed(['--max-semi-space-size=16'], ['--version'], { PROBE_HEAP: '1' });
    expect(large.probe.newSpace).toBeGreaterThan(8 * 2 ** 20);
  }, 60_000);

  it("uses its code cache whatever heap sizes are given (the image's, a Kubernetes example's, none)", async () => {
    for (const flags of [['--max-semi-space-size=16'], ['--max-semi-space-size=64'], ['--max-semi-space-size=16', '--max-old-space-size=128'], []]) {
      const { stderr } = await run(process.execPath, [...flags, join(tree, 'dist/cli.js'), '--version'], {
        cwd: tree,
        env: { ...process.env, NODE_OPTIONS: '', RATELIMIT_CODE_CACHE_REPORT: '1' },
        timeout: 60_000,
      });
      expect(stderr, flags.join(' ')).toMatch(/^code cache: used /m);
    }
  }, 60_000);
});

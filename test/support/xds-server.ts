/**
 * The xDS server of the tests (test/xds-server/, built on go-control-plane as Envoy Gateway's rate-limit runner
 * is): built once with `go build` into a cache directory keyed by its sources, started on a port, fed by a
 * snapshot file the test rewrites, and watched through the JSON event lines it prints (requests, NACKs,
 * responses, streams). `.ci/run` builds it before the suite (`npx tsx test/support/xds-server.ts --build`).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cachePath } from '../../scripts/cache-dir.mjs';

const SOURCE = join(import.meta.dirname, '../xds-server');
const BUILD_TIMEOUT_MS = 300_000;

/** The built binary's path, building it first when this version of the sources has not been built yet. */
export function xdsServerBinary(): string {
  const hash = createHash('sha256');
  for (const f of ['go.mod', 'go.sum', 'main.go']) hash.update(readFileSync(join(SOURCE, f)));
  const dir = cachePath(`xds-server-${hash.digest('hex').slice(0, 16)}`);
  const bin = join(dir, 'xds-server');
  if (existsSync(bin)) return bin;
  mkdirSync(dir, { recursive: true });
  const tmp = `${bin}.${process.pid}.tmp`;
  const out = spawnSync('go', ['build', '-o', tmp, '.'], {
    cwd: SOURCE,
    encoding: 'utf8',
    timeout: BUILD_TIMEOUT_MS,
    env: { ...process.env, GOFLAGS: '-mod=mod', CGO_ENABLED: '0' },
  });
  if (out.status !== 0) throw new Error(`go build of test/xds-server failed (${out.error?.message ?? `exit ${out.status}`}):\n${out.stderr}`);
  renameSync(tmp, bin);
  return bin;
}

export interface XdsEvent {
  readonly event: string;
  readonly version?: string;
  readonly nonce?: string;
  readonly error?: string;
  readonly node?: string;
  readonly metadata?: Record<string, unknown>;
  readonly stream?: number;
  readonly [key: string]: unknown;
}

/** A RateLimitConfig in proto JSON (camelCase field names, units by name). */
export type RateLimitConfigJson = Record<string, unknown>;

export interface XdsServer {
  readonly address: string;
  readonly events: XdsEvent[];
  /** Rewrites the snapshot file (atomically); the server picks it up within ~20 ms. */
  set(version: string, resources: readonly RateLimitConfigJson[]): void;
  /** Resolves with the first event (from index `from` on) that matches. */
  waitFor(match: (e: XdsEvent) => boolean, options?: { from?: number; timeoutMs?: number; what?: string }): Promise<XdsEvent>;
  stop(): Promise<void>;
  /** Starts the server again on the same port, with the snapshot file as it is. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface XdsServerOptions {
  readonly port: number;
  readonly node: string;
  /** The snapshot it starts with (default: version "0", no resources). */
  readonly snapshot?: { readonly version: string; readonly resources: readonly RateLimitConfigJson[] };
  readonly tls?: { readonly cert: string; readonly key: string; readonly ca: string };
}

export async function startXdsServer(options: XdsServerOptions): Promise<XdsServer> {
  const bin = xdsServerBinary();
  const dir = mkdtempSync(join(tmpdir(), 'xds-server-'));
  const file = join(dir, 'snapshot.json');
  const address = `127.0.0.1:${options.port}`;
  const events: XdsEvent[] = [];
  const waiters = new Set<() => void>();
  let child: ChildProcess | undefined;
  let stderr = '';

  const set = (version: string, resources: readonly RateLimitConfigJson[]) => {
    writeFileSync(`${file}.tmp`, JSON.stringify({ version, resources }));
    renameSync(`${file}.tmp`, file);
  };
  const waitFor: XdsServer['waitFor'] = (match, o = {}) => {
    const { from = 0, timeoutMs = 10_000, what = 'an xDS server event' } = o;
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = events.slice(from).find(match);
        if (found === undefined) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve(found);
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(
          new Error(
            `timed out after ${timeoutMs} ms waiting for ${what}; events:\n${events
              .slice(-20)
              .map((e) => JSON.stringify(e))
              .join('\n')}\n${stderr}`,
          ),
        );
      }, timeoutMs);
      waiters.add(check);
      check();
    });
  };
  const start = async () => {
    const args = ['-addr', address, '-node', options.node, '-config', file];
    if (options.tls) args.push('-cert', options.tls.cert, '-key', options.tls.key, '-ca', options.tls.ca);
    const from = events.length;
    const proc = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    let buffer = '';
    proc.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop()!;
      for (const line of lines) if (line.trim() !== '') events.push(JSON.parse(line) as XdsEvent);
      for (const w of [...waiters]) w();
    });
    proc.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    await waitFor((e) => e.event === 'listening', { from, what: `the xDS server listening on ${address}` });
  };
  const stop = async () => {
    const proc = child;
    child = undefined;
    if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill('SIGKILL');
    });
  };
  set(options.snapshot?.version ?? '0', options.snapshot?.resources ?? []);
  await start();
  return {
    address,
    events,
    set,
    waitFor,
    stop,
    restart: start,
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href && process.argv.includes('--build')) {
  console.log(xdsServerBinary());
}

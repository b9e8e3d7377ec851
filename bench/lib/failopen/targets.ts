/**
 * The rate-limit servers of the fail-open audit, behind one interface: this service (`ratelimit serve`, its own
 * process, as a pod runs it) or envoyproxy/ratelimit (start.sh; Redis or memcached). Each replica keeps its gRPC port
 * across restarts, so Envoy's cluster keeps pointing at it; its rules can be rewritten in place (for the
 * reference: in the private runtime directory start.sh copied them to, which the reference watches).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REFERENCE_START, startReference } from '../reference.js';
import type { Target } from '../servers.js';
import { spawnService } from '../../../test/support/service-process.js';
import { freePort } from '../../../test/support/redis.js';

export type Side = 'ours' | 'reference';

/** Where a server finds its counters. */
export type Counters =
  { kind: 'memory' } | { kind: 'redis'; port: number } | { kind: 'sentinel'; master: string; sentinelPort: number } | { kind: 'memcached'; hostPort: string };

export interface ReplicaSpec {
  side: Side;
  counters: Counters;
  /** The rules directory it is started with (this service reads it in place). */
  rulesDir: string;
  /** This service only: further settings (env). */
  env?: Record<string, string>;
  /** Both servers: settings under the reference's names (env). */
  sharedEnv?: Record<string, string>;
}

export interface Replica {
  readonly port: number;
  /** The server's own process id (for the reference: the Go binary, not start.sh). */
  pid(): number;
  /** SIGTERM; resolves once it has exited. */
  stop(): Promise<void>;
  /** Ends it at once (SIGKILL: no drain), for teardown; resolves once it has exited. */
  kill(): Promise<void>;
  /** Starts it again on the same port; resolves once it takes calls. */
  start(): Promise<void>;
  /** Replaces rule file `name` where the running server reads its rules. */
  writeRules(name: string, text: string): void;
  /** Its log so far (this service only; the reference logs nothing at warn unless it fails). */
  log(): string;
  /** host:port of its admin HTTP server (this service only: /metrics). */
  httpAddress(): string | undefined;
}

function oursEnv(spec: ReplicaSpec, port: number): Record<string, string> {
  const c = spec.counters;
  const backend: Record<string, string> =
    c.kind === 'memory'
      ? { BACKEND: 'memory' }
      : c.kind === 'redis'
        ? { BACKEND: 'redis', REDIS_URL: `redis://127.0.0.1:${c.port}` }
        : c.kind === 'memcached'
          ? { BACKEND: 'memcached', MEMCACHE_HOST_PORT: c.hostPort }
          : { BACKEND: 'redis', REDIS_TYPE: 'sentinel', REDIS_SENTINEL_MASTER: c.master, REDIS_SENTINEL_ADDRS: `127.0.0.1:${c.sentinelPort}` };
  // As deployed: the default drain and reload watcher unless the row says otherwise.
  return { CONFIG_DIR: spec.rulesDir, GRPC_PORT: String(port), SHUTDOWN_DRAIN_MS: '5000', CONFIG_WATCH: 'true', ...backend, ...spec.sharedEnv, ...spec.env };
}

function referenceArgs(c: Counters): { address: string; env: string[] } {
  if (c.kind === 'memory') throw new Error('envoyproxy/ratelimit has no memory backend: give it Redis');
  if (c.kind === 'redis') return { address: `127.0.0.1:${c.port}`, env: [] };
  // start.sh's Redis address is unused with BACKEND_TYPE=memcache
  if (c.kind === 'memcached') return { address: '127.0.0.1:1', env: ['BACKEND_TYPE=memcache', `MEMCACHE_HOST_PORT=${c.hostPort}`] };
  return { address: `${c.master},127.0.0.1:${c.sentinelPort}`, env: ['REDIS_TYPE=sentinel'] };
}

/** The Go binary under start.sh (its only child). */
function childOf(pid: number): number {
  const kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
  const kid = kids.find((k) => Number.isInteger(k) && k > 0);
  if (kid === undefined) throw new Error(`start.sh (pid ${pid}) has no child process`);
  return kid;
}

/** The runtime directory start.sh made for the reference (RUNTIME_ROOT in its environment). */
function referenceConfigDir(pid: number): string {
  const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  const root = env.find((e) => e.startsWith('RUNTIME_ROOT='))?.slice('RUNTIME_ROOT='.length);
  if (root === undefined) throw new Error(`no RUNTIME_ROOT in the environment of pid ${pid}`);
  return join(root, 'ratelimit', 'config');
}

export async function startReplica(spec: ReplicaSpec): Promise<Replica> {
  const port = await freePort();
  let stopIt: () => Promise<void> = () => Promise.resolve();
  let killIt: () => Promise<void> = () => Promise.resolve();
  let pid = 0;
  let log: () => string = () => '';
  let http: string | undefined;
  const start = async (): Promise<void> => {
    if (spec.side === 'ours') {
      // 60 s: several processes start in a row on a machine that may be loaded
      const p = await spawnService(oursEnv(spec, port), 60_000);
      pid = p.child.pid ?? 0;
      stopIt = () => p.stop();
      killIt = () => {
        if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
        return p.stop();
      };
      log = () => p.stderr();
      http = p.httpAddress;
    } else {
      const r = referenceArgs(spec.counters);
      const shared = Object.entries(spec.sharedEnv ?? {}).map(([k, v]) => `${k}=${v}`);
      const t: Target = await startReference(spec.rulesDir, r.address, REFERENCE_START, { grpcPort: port, env: [...r.env, ...shared] });
      pid = childOf(t.pid!);
      stopIt = () => t.stop();
      killIt = stopIt; // it exits at once on SIGTERM
    }
  };
  await start();
  return {
    port,
    pid: () => pid,
    stop: () => stopIt(),
    kill: () => killIt(),
    start,
    writeRules: (name, text) => writeFileSync(join(spec.side === 'ours' ? spec.rulesDir : referenceConfigDir(pid), name), text),
    log: () => log(),
    httpAddress: () => http,
  };
}

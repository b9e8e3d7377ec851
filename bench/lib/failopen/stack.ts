/**
 * One audit stack: a real Envoy (rate-limit filter at failure_mode_deny: false) in front of one or two replicas of
 * a rate-limit server (this service or envoyproxy/ratelimit), their counters (memory, a redis-server, a master,
 * a replica and a Sentinel, or a memcached), and an upstream that answers 200. Routes: `/limited` (LIMIT requests a day for each
 * value of the `x-probe` header: the probe) and `/open` (no practical limit, for the load that goes with an event).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rlsBootstrap } from '../../../test/support/envoy-bootstrap.js';
import { setPath } from '../../../test/support/envoy-config.js';
import { envoyRlsCounts, type RlsCounts } from '../../../test/support/envoy-stack.js';
import { startEnvoy, type EnvoyProcess } from '../../../test/support/envoy.js';
import { startUpstream, type Upstream } from '../../../test/support/envoy-upstream.js';
import { eventually } from '../../../test/support/eventually.js';
import { rawHttp } from '../../../test/support/http-raw.js';
import { freePort, RedisProcess, startRedis, startSentinel, type RedisServer, type SentinelSetup } from '../../../test/support/redis.js';
import { startMemcached, type MemcachedProcess } from '../../../test/support/memcached.js';
import { startReplica, type Counters, type Replica, type Side } from './targets.js';

/** Requests a day per probe key on `/limited`: every admission past it is an admission above the limit. */
export const LIMIT = 1;
export const DOMAIN = 'audit';
export const RULES_FILE = 'audit.yaml';
/**
 * The rate-limit filter's timeout. Production uses less (envoy.yaml: 50 ms); the audit gives 2 s so that a loaded
 * 2-core CI machine does not time calls out by itself, which would hide the events' own effect.
 */
export const ENVOY_TIMEOUT = '2s';

/** The rules, valid for both servers; `filler` more descriptors make the file as large as a row needs. */
export function auditRules(filler = 0): string {
  const lines = [
    `domain: ${DOMAIN}`,
    'descriptors:',
    '  - key: generic_key',
    '    value: limited',
    '    descriptors:',
    '      - key: probe',
    `        rate_limit: {unit: day, requests_per_unit: ${LIMIT}}`,
    '  - key: generic_key',
    '    value: open',
    '    rate_limit: {unit: second, requests_per_unit: 1000000000}',
  ];
  for (let i = 0; i < filler; i++) lines.push(`  - key: filler_${i}`, `    value: value_${i}`, '    rate_limit: {unit: minute, requests_per_unit: 100}');
  return `${lines.join('\n')}\n`;
}

export interface StackSpec {
  side: Side;
  /** The counters (the reference gets Redis where this service runs on memory: it has no memory backend). */
  store: 'memory' | 'redis' | 'sentinel' | 'memcached';
  replicas?: 1 | 2;
  /** This service only: further settings. */
  env?: Record<string, string>;
  /** Both servers: settings under the reference's names. */
  sharedEnv?: Record<string, string>;
}

export interface AuditStack {
  readonly side: Side;
  readonly envoy: EnvoyProcess;
  /** Envoy's listener port. */
  readonly port: number;
  readonly replicas: readonly Replica[];
  readonly redis: RedisServer | undefined;
  /** store 'memcached': the server both sides count in. */
  readonly memcached: MemcachedProcess | undefined;
  readonly sentinel: { master: RedisServer; replica: RedisProcess; sentinel: SentinelSetup } | undefined;
  /** Envoy's rate-limit counters for the routes (all go to cluster `app`). */
  counts(): Promise<RlsCounts>;
  /** Healthy members of Envoy's rate-limit cluster (2 replicas only: they are health-checked). */
  healthy(n: number): Promise<void>;
  close(): Promise<void>;
}

const ROUTES = [
  {
    prefix: '/limited',
    rateLimits: [{ actions: [{ generic_key: { descriptor_value: 'limited' } }, { request_headers: { header_name: 'x-probe', descriptor_key: 'probe' } }] }],
  },
  { prefix: '/', rateLimits: [{ actions: [{ generic_key: { descriptor_value: 'open' } }] }] },
];

export async function startAuditStack(spec: StackSpec): Promise<AuditStack> {
  const closers: (() => Promise<void>)[] = [];
  const close = async (): Promise<void> => {
    for (const c of closers.reverse()) await c().catch(() => undefined);
  };
  try {
    const dir = mkdtempSync(join(tmpdir(), 'rl-failopen-'));
    closers.push(() => Promise.resolve(rmSync(dir, { recursive: true, force: true })));
    writeFileSync(join(dir, RULES_FILE), auditRules());
    const store = spec.side === 'reference' && spec.store === 'memory' ? 'redis' : spec.store;
    let counters: Counters = { kind: 'memory' };
    let redis: RedisServer | undefined;
    let sentinel: AuditStack['sentinel'];
    let memcached: MemcachedProcess | undefined;
    if (store === 'memcached') {
      memcached = await startMemcached();
      closers.push(() => memcached!.stop());
      counters = { kind: 'memcached', hostPort: memcached.address };
    } else if (store === 'redis') {
      redis = await startRedis();
      closers.push(() => redis!.stop());
      counters = { kind: 'redis', port: redis.port };
    } else if (store === 'sentinel') {
      // the replica syncs at once (the default waits 5 s to batch diskless syncs); the sentinel knows it from the start
      const master = await startRedis(['--repl-diskless-sync-delay', '0']);
      closers.push(() => master.stop());
      const replica = new RedisProcess(await freePort(), ['--replicaof', '127.0.0.1', String(master.port)]);
      await replica.start();
      closers.push(() => replica.destroy());
      const s = await startSentinel(master.port, { downAfterMs: 1000, knownReplicas: [replica.port] });
      closers.push(() => s.stop());
      sentinel = { master, replica, sentinel: s };
      counters = { kind: 'sentinel', master: s.masterName, sentinelPort: s.sentinels[0]!.port };
    }
    const replicas: Replica[] = [];
    for (let i = 0; i < (spec.replicas ?? 1); i++) {
      const r = await startReplica({
        side: spec.side,
        counters,
        rulesDir: dir,
        ...(spec.env ? { env: spec.env } : {}),
        ...(spec.sharedEnv ? { sharedEnv: spec.sharedEnv } : {}),
      });
      replicas.push(r);
      closers.push(() => r.kill());
    }
    const upstream: Upstream = await startUpstream();
    closers.push(() => upstream.close());
    const config = rlsBootstrap({
      service: { address: '127.0.0.1', port: replicas[0]!.port },
      upstream: { address: '127.0.0.1', port: upstream.port },
      domain: DOMAIN,
      routes: ROUTES,
      filter: { timeout: ENVOY_TIMEOUT },
    });
    const cluster = 'static_resources.clusters[name=ratelimit]';
    if (replicas.length > 1) {
      setPath(
        config,
        `${cluster}.load_assignment.endpoints[0].lb_endpoints`,
        replicas.map((r) => ({ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: r.port } } } })),
      );
      // As a rolling restart is run: a replica saying NOT_SERVING (or gone) is out after one check (every 100 ms).
      setPath(config, `${cluster}.health_checks`, [
        { timeout: '0.5s', interval: '0.1s', no_traffic_interval: '0.1s', unhealthy_threshold: 1, healthy_threshold: 1, grpc_health_check: {} },
      ]);
      setPath(config, `${cluster}.common_lb_config`, { healthy_panic_threshold: { value: 0 } });
    }
    const envoy = await startEnvoy(config);
    closers.push(() => envoy.stop());
    const port = await envoy.listenerPort('ingress');
    const healthy = (n: number) =>
      eventually(async () => (await envoy.stat('cluster.ratelimit.membership_healthy')) === n, {
        timeoutMs: 30_000,
        intervalMs: 25,
        what: `${n} healthy rate-limit replicas`,
      });
    if (replicas.length > 1) await healthy(replicas.length);
    // Envoy opens its connection to the server on the first call: make that call on `/open`, until one is decided.
    await eventually(
      async () => {
        await rawHttp(port, 'GET', '/open');
        return (await envoyRlsCounts(envoy, 'app')).ok > 0;
      },
      { timeoutMs: 20_000, intervalMs: 50, what: `a decided call through Envoy (${spec.side})` },
    );
    return { side: spec.side, envoy, port, replicas, redis, memcached, sentinel, counts: () => envoyRlsCounts(envoy, 'app'), healthy, close };
  } catch (error) {
    await close();
    throw error;
  }
}

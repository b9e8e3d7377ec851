/**
 * statsd and DogStatsD side by side with envoyproxy/ratelimit: each service sends its stats to a real
 * statsd_exporter (v0.31.0) holding the reference's example mapping (its docker-compose example), after the same
 * requests; the two exporters serve the same series. Left out of the comparison: the reference's Go runtime and
 * Redis pool gauges and its rules loader's (`ratelimit_go_*`, `ratelimit_redis_pool_*`, `runtime_*`), which stand
 * for nothing here, and its
 * DogStatsD client's own telemetry (`datadog_*`). Response-time buckets are compared by labels and count only:
 * the reference times whole milliseconds, this service fractions of them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { freePort, startRedis, type RedisServer } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { portAccepts, spawnService, type ServiceProcess } from '../support/service-process.js';
import { only, startStatsdExporter, type Series, type StatsdExporter } from '../support/statsd-exporter.js';

const TOOL = '/work/shared/tools/envoy-ratelimit';
const MAPPING = join(import.meta.dirname, '../fixtures/statsd-mapping/reference-example-conf.yaml');
const RULES = `domain: edge
descriptors:
  - key: api
    rate_limit: { unit: hour, requests_per_unit: 5 }
  - key: plan
    value: gold
    descriptors:
      - key: user
        rate_limit: { unit: hour, requests_per_unit: 2 }
`;
const canRun = existsSync(join(TOOL, 'ratelimit')) && process.platform === 'linux' && process.arch === 'x64';
if (!canRun) console.warn(`envoyproxy/ratelimit is not at ${TOOL}: its statsd output is not compared`);

let dir: string;
const stops: (() => Promise<void>)[] = [];
beforeAll(() => {
  if (!canRun) return;
  dir = mkdtempSync(join(tmpdir(), 'reference-statsd-'));
  writeFileSync(join(dir, 'edge.yaml'), RULES);
});
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});
afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** The reference on a Redis of its own (its counts start from zero in each scenario, as ours in memory do). */
async function startReference(env: Record<string, string>): Promise<string> {
  const redis: RedisServer = await startRedis();
  stops.push(() => redis.stop());
  const [grpc, http, debug] = [await freePort(), await freePort(), await freePort()];
  const vars = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  // its own process group, so the script and the server are stopped together
  const child: ChildProcess = spawn(join(TOOL, 'start.sh'), [String(grpc), String(http), String(debug), dir, `127.0.0.1:${redis.port}`, ...vars], {
    detached: true,
    stdio: 'ignore',
  });
  stops.push(async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(-child.pid!, 'SIGTERM');
    await exited;
  });
  return `127.0.0.1:${grpc}`;
}

async function startOurs(env: Record<string, string>): Promise<string> {
  const svc: ServiceProcess = await spawnService({ CONFIG_DIR: dir, ...env });
  stops.push(() => svc.stop());
  return svc.grpcAddress;
}

/** The same requests: 7 on `api` (2 over), 3 on plan gold / user (1 over), then a refused one (empty domain). */
async function drive(address: string, probeFirst: boolean): Promise<void> {
  const client = new RlsTestClient(address);
  try {
    // The reference opens its port a moment after loading the rules: a bare TCP connect (no call to count) waits for it.
    if (probeFirst) await eventually(() => portAccepts(address), { timeoutMs: 15_000, what: 'the gRPC port to accept' });
    for (let i = 0; i < 7; i++) await client.ask('edge', [[['api', 'x']]], 1);
    for (let i = 0; i < 3; i++)
      await client.ask(
        'edge',
        [
          [
            ['plan', 'gold'],
            ['user', 'u1'],
          ],
        ],
        1,
      );
    await client.ask('', [[['api', 'x']]], 1).catch(() => undefined);
  } finally {
    client.close();
  }
}

const compared = (s: Series) =>
  Object.fromEntries(
    [...only(s, (n) => !/^(go|process|promhttp|statsd_exporter|statsd_metric_mapper|datadog|ratelimit_go|ratelimit_redis_pool|runtime)_/.test(n))]
      .sort()
      .map(([k, v]) => [k, k.startsWith('ratelimit_service_response_time_seconds_') && !k.includes('_count') ? 'observed' : v]),
  );

async function sideBySide(env: Record<string, string>): Promise<[Series, Series]> {
  const exporters: StatsdExporter[] = [];
  for (let i = 0; i < 2; i++) {
    const e = await startStatsdExporter(MAPPING);
    stops.push(() => e.stop());
    exporters.push(e);
  }
  const [theirs, ours] = exporters as [StatsdExporter, StatsdExporter];
  const common = { STATSD_HOST: '127.0.0.1', STATS_FLUSH_INTERVAL: '200ms', ...env };
  await drive(await startReference({ ...common, STATSD_PORT: String(theirs.port) }), true);
  await drive(await startOurs({ ...common, STATSD_PORT: String(ours.port) }), false);
  const done = (s: Series) => [...s].some(([k, v]) => k.includes('total_requests') && k.includes('ShouldRateLimit') && v === 11);
  // Done once the last call is counted and two reads a flush apart agree (a flush may span two packets or writes).
  const read = async (e: StatsdExporter) => {
    let [s, before] = [new Map() as Series, ''];
    await eventually(
      async () => {
        s = await e.series();
        const now = JSON.stringify(compared(s));
        const stable = now === before;
        before = now;
        return done(s) && stable;
      },
      { timeoutMs: 15_000, intervalMs: 1200, what: 'the stats flushed' },
    );
    return s;
  };
  return [await read(theirs), await read(ours)];
}

it.runIf(canRun)(
  "USE_STATSD: the exporter fed by this service serves the reference's series (its example mapping)",
  async () => {
    const [theirs, ours] = await sideBySide({ USE_STATSD: 'true' });
    expect(theirs.get('ratelimit_service_rate_limit_over_limit{domain="edge",key1="api"}')).toBe(2);
    expect(compared(ours)).toEqual(compared(theirs));
  },
  90_000,
);

it.runIf(canRun)(
  'USE_DOG_STATSD with EXTRA_TAGS and a mogrifier: the same names and tags as the reference',
  async () => {
    const [theirs, ours] = await sideBySide({
      USE_STATSD: 'false',
      USE_DOG_STATSD: 'true',
      EXTRA_TAGS: 'env:test,team:edge',
      USE_DOG_STATSD_MOGRIFIERS: 'HITS',
      DOG_STATSD_MOGRIFIER_HITS_PATTERN: '^ratelimit\\.service\\.rate_limit\\.([^.]+)\\.(.*)\\.([^.]+)$',
      DOG_STATSD_MOGRIFIER_HITS_NAME: 'ratelimit.service.rate_limit.$3',
      DOG_STATSD_MOGRIFIER_HITS_TAGS: 'domain:$1,descriptor:$2',
    });
    expect(theirs.get('ratelimit_service_rate_limit_over_limit{descriptor="api",domain="edge",env="test",team="edge"}')).toBe(2);
    expect(compared(ours)).toEqual(compared(theirs));
  },
  90_000,
);

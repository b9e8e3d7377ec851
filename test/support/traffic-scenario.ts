/**
 * The realistic-traffic scenario shared by test/e2e/traffic.test.ts: the real service as its own process on a
 * real Redis (single or Cluster) with config/example.yaml plus rules whose limits can be checked exactly;
 * Envoy-shaped traffic all along; random faults at random moments; between faults (after a settle margin)
 * exactness probes: a fresh key per probe, L + 5 concurrent calls, exactly L admitted per limit.
 * A quarter of the calls are ext_authz Check and a fifth ShouldRateLimit on the features domain
 * (feature-rules.ts, feature-traffic.ts); the probes send part of their calls as Check.
 */
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { join } from 'node:path';
import { encodeRequest, type RawDescriptor } from './raw-rls.js';
import { emptyStats, RawClientPool, runTraffic, type TrafficStats } from './envoy-traffic.js';
import { FEATURE_RULES } from './feature-rules.js';
import { CHECK_PATH, checkOutcome, encodeCheck, featureMix } from './feature-traffic.js';
import { FaultInjector, type FaultKind } from './redis-faults.js';
import type { RedisProcess } from './redis.js';
import { prng, type Prng } from './prng.js';
import { gauge, scrapeMetrics, total } from './scrape.js';
import { spawnService, type ServiceProcess } from './service-process.js';
import { eventually } from './eventually.js';

/** Limits the probes check: L per fixed minute window per user, and a token bucket of L per hour per tenant. */
export const PROBE_LIMIT = 10;
export const EXACT_RULES = `# Rules whose limits the traffic test checks exactly (fresh keys per probe).
domain: traffic
authz:
  rate_limits:
    - actions: [{generic_key: {descriptor_value: api}}, {request_headers: {header_name: x-user, descriptor_key: user}}]
    - actions: [{request_headers: {header_name: x-tenant, descriptor_key: tenant}}]
descriptors:
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 100000}
  - key: generic_key
    value: api
    descriptors:
      - key: user
        rate_limit: {name: user_minute, algorithm: fixed_window, unit: minute, requests_per_unit: ${PROBE_LIMIT}}
  - key: tenant
    rate_limit: {name: tenant_hour, algorithm: token_bucket, unit: hour, requests_per_unit: ${PROBE_LIMIT}, burst: ${PROBE_LIMIT}}
`;

export interface ScenarioOptions {
  readonly seed: string;
  readonly durationMs: number;
  readonly env: Record<string, string>;
  readonly redisNodes: readonly RedisProcess[];
  readonly cluster: boolean;
  readonly maxPauseMs: number;
  readonly faultKinds?: readonly FaultKind[];
  /** Envoy-shaped calls per second (open loop). */
  readonly ratePerSecond?: number;
  readonly connections?: number;
  /** Quiet time after a fault before a probe (Redis reconnect, over-limit cache flush). */
  readonly settleMs?: number;
}

export interface ScenarioResult {
  readonly seed: string;
  /** ShouldRateLimit calls (the Envoy-shaped mix and the features domain). */
  readonly stats: TrafficStats;
  /** ext_authz Check calls. */
  readonly checkStats: TrafficStats;
  /** Exit of the service during the run ("code 1" / "signal SIGSEGV"), undefined when it lived. */
  readonly died?: string;
  /** Last lines the service wrote to stderr (for failure messages). */
  readonly stderrTail: string;
  readonly probes: number;
  /** Probes that did not admit exactly L, described. */
  readonly probeFailures: string[];
  readonly faults: string[];
  /** Late answers counted by the service (ratelimit_grpc_late_answers_total) during the run, ShouldRateLimit's and Check's. */
  readonly serverLate: number;
  readonly serverLateCheck: number;
  /** Event-loop delay p99 of the test process itself (ms): a busy client sees deadlines pass that the service met. */
  readonly clientLoopP99Ms: number;
  /** Faults after which the service's store was not ready again within 15 s of Redis answering. */
  readonly slowRecoveries: string[];
  /** Decisions the service made by FAILURE_MODE (ratelimit_store_fallbacks_total) during the run. */
  readonly fallbacks: number;
  readonly maxRssBytes: number;
  readonly scrapeErrors: number;
  /** A valid request after the run: its answer, or the error. */
  readonly afterwards: string;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function shuffle<T>(r: Prng, items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = r.int(0, i);
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

/**
 * L + 5 concurrent calls sharing a fresh user and tenant, each a ShouldRateLimit call or (about a third) an
 * ext_authz Check whose headers name the same user and tenant. A rejected request counts on none of its limits
 * (docs/algorithms.md), so both counters move together: undefined when exactly L calls were admitted over both
 * protocols, and each limit's status said OK to exactly L of them (a Check admitted = OK on both).
 */
async function probe(pool: RawClientPool, r: Prng, key: string): Promise<string | undefined> {
  // Stay clear of a minute boundary: the fixed window would start again in the middle of the probe.
  while (Date.now() % 60_000 > 58_500 || Date.now() % 60_000 < 500) await sleep(100);
  const calls = Array.from({ length: PROBE_LIMIT + 5 }, async () => {
    if (r.chance(1 / 3)) {
      const spec = { ip: '192.0.2.1', headers: { 'x-user': key, 'x-tenant': key }, contextExtensions: { ratelimit_domain: 'traffic' } };
      const o = checkOutcome(await pool.call(CHECK_PATH, encodeCheck(spec), 5000), false);
      const admitted = o.verdict === 'allowed';
      return { o, admitted, userOk: admitted, tenantOk: admitted, check: true };
    }
    const user: RawDescriptor = {
      entries: [
        ['generic_key', 'api'],
        ['user', key],
      ],
    };
    const tenant: RawDescriptor = { entries: [['tenant', key]] };
    const descriptors = shuffle<RawDescriptor>(r, [
      user,
      tenant,
      { entries: [['remote_address', `${key}-ip`]] },
      ...(r.chance(0.5) ? [{ entries: [['plan', 'free']] } as RawDescriptor] : []),
    ]);
    const o = await pool.send(encodeRequest('traffic', descriptors), 5000);
    const ok = (i: number) => o.statuses?.[i]?.[0] === 1;
    return { o, admitted: o.overallCode === 1, userOk: ok(descriptors.indexOf(user)), tenantOk: ok(descriptors.indexOf(tenant)), check: false };
  });
  const answers = await Promise.all(calls);
  const failed = answers.filter((a) => a.o.status !== 'OK');
  if (failed.length > 0) return `${key}: ${failed.length} calls failed (${failed[0]!.o.status} ${failed[0]!.o.message ?? ''})`;
  const count = (f: (a: (typeof answers)[number]) => boolean) => answers.filter(f).length;
  const [admitted, userOk, tenantOk] = [count((a) => a.admitted), count((a) => a.userOk), count((a) => a.tenantOk)];
  const checks = `${count((a) => a.check)} by Check, admitted ${count((a) => a.check && a.admitted)}`;
  return admitted === PROBE_LIMIT && userOk === PROBE_LIMIT && tenantOk === PROBE_LIMIT
    ? undefined
    : `${key}: admitted ${admitted}, user ${userOk}, tenant ${tenantOk} of ${PROBE_LIMIT} (${checks})`;
}

/** Late Check answers the service counted (the method label of ratelimit_grpc_late_answers_total names Check). */
function lateChecks(samples: Map<string, number>): number {
  let sum = 0;
  for (const [key, value] of samples) if (key.startsWith('ratelimit_grpc_late_answers_total{') && key.includes('Check')) sum += value;
  return sum;
}

export async function runScenario(o: ScenarioOptions): Promise<ScenarioResult> {
  const r = prng(o.seed);
  const dir = mkdtempSync(join(tmpdir(), 'rl-traffic-'));
  copyFileSync(join(import.meta.dirname, '../../config/example.yaml'), join(dir, 'example.yaml'));
  writeFileSync(join(dir, 'traffic.yaml'), EXACT_RULES);
  writeFileSync(join(dir, 'features.yaml'), FEATURE_RULES);
  const service: ServiceProcess = await spawnService({ CONFIG_DIR: dir, ...o.env });
  let stderrTail = '';
  service.child.stderr?.on('data', (c: Buffer) => (stderrTail = (stderrTail + c.toString()).slice(-4000)));
  let died: string | undefined;
  service.child.once('exit', (code, signal) => (died = signal ? `signal ${signal}` : `code ${code}`));
  const pool = new RawClientPool(service.grpcAddress, o.connections ?? 4);
  const faults = new FaultInjector(o.redisNodes, r, o.cluster);
  const stats = emptyStats();
  const checkStats = emptyStats();
  const origin = Date.now();
  const until = origin + o.durationMs;
  const stop = () => Date.now() > until || died !== undefined;
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const slowRecoveries: string[] = [];
  let maxRss = 0;
  let scrapeErrors = 0;
  let serverLateStart = 0;
  let serverLateCheckStart = 0;
  let fallbacksStart = 0;
  try {
    const first = await scrapeMetrics(service.httpAddress);
    serverLateStart = total(first, 'ratelimit_grpc_late_answers_total');
    serverLateCheckStart = lateChecks(first);
    fallbacksStart = total(first, 'ratelimit_store_fallbacks_total');
    const sampler = (async () => {
      while (!stop()) {
        try {
          maxRss = Math.max(maxRss, gauge(await scrapeMetrics(service.httpAddress), 'ratelimit_process_resident_memory_bytes') ?? 0);
        } catch {
          scrapeErrors++;
        }
        await sleep(500);
      }
    })();
    const mix = featureMix({ checkShare: 0.25, rlsShare: 0.2, checkStats, rlsStats: stats, storeFailureAllowed: o.env['FAILURE_MODE'] === 'closed' });
    const traffic = runTraffic({ pool, random: prng(`${o.seed}/traffic`), ratePerSecond: o.ratePerSecond ?? 200, stop, stats, mix });
    const probeFailures: string[] = [];
    let probes = 0;
    while (!stop() && Date.now() < until - 2 * (o.settleMs ?? 1500)) {
      await sleep(o.settleMs ?? 1500);
      if (stop()) break;
      const failure = await probe(pool, r, `probe-${o.seed}-${probes++}`);
      if (failure) probeFailures.push(`${failure} (+${Date.now() - origin} ms)`);
      await sleep(r.int(0, 800));
      if (stop()) break;
      const fault = await faults.injectRandom(o.maxPauseMs, o.faultKinds);
      // The fault window lasts until the service says its store is ready again (it reconnects on its own).
      try {
        await eventually(async () => gauge(await scrapeMetrics(service.httpAddress), 'ratelimit_store_ready') === 1, {
          timeoutMs: 15_000,
          intervalMs: 50,
          what: 'store ready',
        });
      } catch {
        slowRecoveries.push(`${fault.kind} at +${fault.start - origin} ms`);
      }
      fault.end = Date.now();
    }
    await Promise.all([traffic, sampler]);
    let serverLate = Number.NaN;
    let serverLateCheck = Number.NaN;
    let fallbacks = Number.NaN;
    let afterwards = '';
    if (died === undefined) {
      const last = await scrapeMetrics(service.httpAddress);
      serverLateCheck = lateChecks(last) - serverLateCheckStart;
      serverLate = total(last, 'ratelimit_grpc_late_answers_total') - serverLateStart - serverLateCheck;
      fallbacks = total(last, 'ratelimit_store_fallbacks_total') - fallbacksStart;
      const a = await pool.send(encodeRequest('traffic', [{ entries: [['tenant', `after-${o.seed}`]] }]), 2000);
      afterwards = a.status === 'OK' ? `OK overall=${a.overallCode} remaining=${a.statuses?.[0]?.[1]}` : `${a.status} ${a.message ?? ''}`;
    }
    return {
      seed: o.seed,
      stats,
      checkStats,
      died,
      stderrTail,
      probes,
      probeFailures,
      faults: faults.describe(origin),
      serverLate,
      serverLateCheck,
      fallbacks,
      clientLoopP99Ms: loop.percentile(99) / 1e6,
      slowRecoveries,
      maxRssBytes: maxRss,
      scrapeErrors,
      afterwards,
    };
  } finally {
    loop.disable();
    pool.close();
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * One measured run of bench/rlqs.ts: the service as its own process (fresh for the run), two Envoys
 * (--concurrency 1) in front of one upstream, either with Envoy's ratelimit filter (a RateLimitService call per
 * request) or with the rate_limit_quota filter as docs/rlqs.md publishes it (only addresses substituted), both
 * on the same rule ({name: all} at `limit`/s in domain `edge`). After a warm-up (a request through each Envoy,
 * for RLQS both Envoys holding an assignment, then a second of the same traffic and 3 s of rest), the service's
 * CPU is read at rest for `idleS`, then paced traffic goes through both Envoys for `seconds` (Envoy's and the
 * service's counters read around it), then, after 3 s, at rest again for `idleS`.
 */
import { rlsBootstrap } from '../../test/support/envoy-bootstrap.js';
import { startEnvoy, type EnvoyProcess } from '../../test/support/envoy.js';
import { pacedTraffic, rlqsEnvoyConfig, type PacedResult } from '../../test/support/rlqs.js';
import { scrapeMetrics, total } from '../../test/support/scrape.js';
import { percentile } from './h2load.js';
import { cpuSeconds, startOurs, type Target } from './servers.js';

export type Path = 'rls' | 'rlqs';

export interface RunSpec {
  readonly path: Path;
  /** The rule's limit, requests per second (the rules in `configDir` say the same). */
  readonly limit: number;
  /** Requests per second in all, split evenly over the two Envoys. */
  readonly rate: number;
  readonly seconds: number;
  readonly idleS: number;
  readonly configDir: string;
  readonly upstreamPort: number;
  /** BACKEND=redis on this Redis; absent: memory. */
  readonly redisUrl?: string;
  readonly signal: AbortSignal;
}

export interface RunResult {
  readonly sent: number;
  readonly admitted: number;
  /** admitted ÷ (limit × seconds), and the same from the second second on. */
  readonly ratio: number;
  readonly ratioAfterFirst: number;
  readonly p50: number;
  readonly p99: number;
  /** Service CPU ms per request above its rate at rest, and that rate (CPU ms per second). */
  readonly cpuMsPerRequest: number;
  readonly idleCpuMsPerS: number;
  /** Messages Envoy sent to the service per request, and bytes it wrote to the service's cluster per request. */
  readonly messagesPerRequest: number;
  readonly bytesPerRequest: number;
  /** Answers other than 200/429, Envoy counting ratelimit errors or fail-opens: anything that taints the run. */
  readonly problems: string[];
}

/** Rest after the warm-up before the service's CPU at rest is read: the start-up's lazy work has ended. */
const SETTLE_MS = 3000;

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(new Error('interrupted'));
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), reject(new Error('interrupted'))), { once: true });
  });

function envoyConfig(spec: RunSpec, service: Target): object {
  if (spec.path === 'rlqs') return rlqsEnvoyConfig(service.address, spec.upstreamPort);
  const [host, port] = service.address.split(':') as [string, string];
  return rlsBootstrap({
    service: { address: host, port: Number(port) },
    upstream: { address: '127.0.0.1', port: spec.upstreamPort },
    domain: 'edge',
    routes: [{ prefix: '/', rateLimits: [{ actions: [{ generic_key: { descriptor_key: 'name', descriptor_value: 'all' } }] }] }],
  });
}

/** Envoy's counters of its `ratelimit` cluster (the service), summed over the Envoys. */
async function envoyCounters(envoys: readonly EnvoyProcess[]): Promise<Map<string, number>> {
  const sum = new Map<string, number>();
  for (const e of envoys) {
    for (const [k, v] of await e.stats('^cluster\\.(ratelimit\\.upstream_(rq_total|cx_tx_bytes_total)|app\\.ratelimit\\.)')) sum.set(k, (sum.get(k) ?? 0) + v);
  }
  return sum;
}

async function waitAssigned(httpAddress: string, signal: AbortSignal): Promise<void> {
  const until = Date.now() + 15_000;
  for (;;) {
    const view = (await (await fetch(`http://${httpAddress}/rlqs`)).json()) as { buckets: { bucket: Record<string, string>; holders: { share: number }[] }[] };
    const holders = view.buckets.find((b) => b.bucket['name'] === 'all')?.holders ?? [];
    if (holders.length === 2 && holders.every((h) => h.share > 0)) return;
    if (Date.now() > until) throw new Error(`the two Envoys were not both assigned within 15 s: ${JSON.stringify(view)}`);
    await sleep(100, signal);
  }
}

/** Runs `spec` once; everything it starts is stopped before it returns or throws. */
export async function measure(spec: RunSpec): Promise<RunResult> {
  const env: Record<string, string> = { CONFIG_DIR: spec.configDir, ...(spec.redisUrl !== undefined ? { BACKEND: 'redis', REDIS_URL: spec.redisUrl } : {}) };
  const service = await startOurs(spec.path, env);
  const envoys: EnvoyProcess[] = [];
  try {
    for (let i = 0; i < 2; i++) envoys.push(await startEnvoy(envoyConfig(spec, service)));
    const urls = await Promise.all(envoys.map((e) => e.listenerUrl('ingress')));
    for (const url of urls) await (await fetch(`${url}/warm-up`, { signal: spec.signal })).arrayBuffer();
    if (spec.path === 'rlqs') await waitAssigned(service.httpAddress!, spec.signal);
    // A second of the same traffic (connections, the JIT), then rest: the window or token buckets fill again.
    await Promise.all(urls.map((u) => pacedTraffic(`${u}/warm-up`, spec.rate / urls.length, 1000, {}, spec.signal)));
    await sleep(SETTLE_MS, spec.signal);

    /** The service's CPU seconds per second over `idleS` with no traffic. */
    const rest = async (): Promise<number> => {
      const cpu0 = cpuSeconds(service.pid);
      const at = performance.now();
      await sleep(spec.idleS * 1000, spec.signal);
      return (cpuSeconds(service.pid) - cpu0) / ((performance.now() - at) / 1000);
    };
    const restBefore = await rest();

    const before = {
      envoy: await envoyCounters(envoys),
      reports: total(await scrapeMetrics(service.httpAddress!), 'ratelimit_rlqs_reports_total'),
      cpu: cpuSeconds(service.pid),
      at: performance.now(),
    };
    const runs: PacedResult[] = await Promise.all(urls.map((u) => pacedTraffic(`${u}/bench`, spec.rate / urls.length, spec.seconds * 1000, {}, spec.signal)));
    const cpu = cpuSeconds(service.pid) - before.cpu;
    const wallS = (performance.now() - before.at) / 1000;
    if (spec.signal.aborted) throw new Error('interrupted');
    const after = { envoy: await envoyCounters(envoys), reports: total(await scrapeMetrics(service.httpAddress!), 'ratelimit_rlqs_reports_total') };
    await sleep(SETTLE_MS, spec.signal);
    // At rest, the lower of before and after: before may still hold the start-up's late work (GC, lazy
    // compilation), after may hold the garbage of the run; either raises the rate above what the service spends at rest.
    const idlePerS = Math.min(restBefore, await rest());
    const delta = (name: string) => (after.envoy.get(name) ?? 0) - (before.envoy.get(name) ?? 0);

    const sent = runs.reduce((n, r) => n + r.sent, 0);
    const admitted = runs.reduce((n, r) => n + (r.byStatus.get(200) ?? 0), 0);
    const admittedAfterFirst = runs.reduce((n, r) => n + r.admittedPerSecond.slice(1).reduce((a, b) => a + b, 0), 0);
    const latencies = runs.flatMap((r) => r.latenciesMs).sort((a, b) => a - b);
    const problems: string[] = [];
    const other = runs.reduce((n, r) => n + r.sent - (r.byStatus.get(200) ?? 0) - (r.byStatus.get(429) ?? 0), 0);
    if (other > 0) problems.push(`${other} of ${sent} answers were neither 200 nor 429 (${JSON.stringify(runs.map((r) => [...r.byStatus]))})`);
    const failOpen = delta('cluster.app.ratelimit.error') + delta('cluster.app.ratelimit.failure_mode_allowed');
    if (failOpen > 0) problems.push(`Envoy counted ${failOpen} ratelimit errors / fail-opens`);
    // RLS: one ShouldRateLimit call (one message) per request, as Envoy counts requests to the cluster. RLQS: one
    // stream per Envoy (Envoy 1.40 counts no messages on it), so the usage reports are counted by the service.
    const messages = spec.path === 'rls' ? delta('cluster.ratelimit.upstream_rq_total') : after.reports - before.reports;
    return {
      sent,
      admitted,
      ratio: admitted / (spec.limit * spec.seconds),
      ratioAfterFirst: admittedAfterFirst / (spec.limit * (spec.seconds - 1)),
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
      cpuMsPerRequest: ((cpu - idlePerS * wallS) / sent) * 1000,
      idleCpuMsPerS: idlePerS * 1000,
      messagesPerRequest: messages / sent,
      bytesPerRequest: delta('cluster.ratelimit.upstream_cx_tx_bytes_total') / sent,
      problems,
    };
  } finally {
    for (const e of envoys) await e.stop();
    await service.stop();
  }
}

/**
 * What the reference's stats cost per request, on the metrics path a decision takes (per descriptor, per
 * decision, per gRPC call), measured in CPU time in one process, in alternated rounds:
 *   A  the metrics of another build (`--a`, its dist/ directory: e.g. the branch's base, built aside);
 *   B  this build's, with USE_STATSD off and no mapping (the reference's stats not created);
 *   C  this build's, with a mapping (Envoy Gateway's statsd_conf.yaml) into the registry.
 * Each simulated request reports two descriptors, one decision and one gRPC call, as ShouldRateLimit does.
 * Prints each round's CPU ns per request and the median ratios B / A and C / A.
 *
 *   npm run build && npx tsx bench/reference-stats.ts --a /tmp/base/dist [--requests 200000] [--rounds 7]
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { benchArgs } from './lib/args.js';
import { median } from './lib/stats.js';

const args = benchArgs('bench/reference-stats.ts', { a: 'string', b: 'string', requests: 'string', rounds: 'string' });
const requests = args.num('requests', 200_000);
const rounds = args.num('rounds', 7);
const dists = { A: resolve(args.str('a', 'dist/ab/base')), B: resolve(args.str('b', 'dist')) };
const MAPPING = join(import.meta.dirname, '../test/fixtures/statsd-mapping/envoy-gateway-statsd_conf.yaml');

interface MetricsLike {
  observer: { onDescriptor(r: object): void; onDecision(domain: string, over: boolean, ms: number): void };
  grpcRequestDuration: { observe(labels: object, v: number): void };
  setRules(s: object): void;
  reference?: { onCall(method: string, seconds: number): void } | undefined;
  useReference?(stats: unknown): void;
  registry: unknown;
}
type Create = (o: { defaultMetrics: boolean }) => MetricsLike;

const load = async (dist: string, path: string): Promise<Record<string, unknown>> =>
  (await import(pathToFileURL(join(dist, path)).href)) as Record<string, unknown>;
const createA = (await load(dists.A, 'observability/metrics.js'))['createMetrics'] as Create;
const createB = (await load(dists.B, 'observability/metrics.js'))['createMetrics'] as Create;
const { parseMappingFile } = await load(dists.B, 'observability/reference-stats/mapping-file.js');
const { PromMappingSink } = await load(dists.B, 'observability/reference-stats/prom-sink.js');
const { ReferenceStats } = await load(dists.B, 'observability/reference-stats/reference-stats.js');

const SNAPSHOT = { version: 'v1', domains: [{ name: 'edge', statsKeys: ['edge.api', 'edge.plan_gold.user'] }] };
const REPORTS = ['edge.api', 'edge.plan_gold.user'].map((statsKey) => ({
  domain: 'edge',
  statsKey,
  hits: 1,
  overLimit: false,
  nearLimit: false,
  shadowMode: false,
  quotaMode: false,
}));

function subject(kind: 'A' | 'B' | 'C'): MetricsLike {
  const m = (kind === 'A' ? createA : createB)({ defaultMetrics: false });
  m.setRules(SNAPSHOT);
  if (kind === 'C') {
    const config = (parseMappingFile as (t: string, f: string) => unknown)(readFileSync(MAPPING, 'utf8'), MAPPING);
    const Sink = PromMappingSink as new (c: unknown, r: unknown) => object;
    const Stats = ReferenceStats as new (live: object, batched: object[]) => MetricsLike['reference'];
    m.useReference!(new Stats(new Sink(config, m.registry), []));
  }
  return m;
}

/** CPU ns per request for `n` requests on `m`, the path start-grpc.ts and the engine take. */
function run(m: MetricsLike, n: number): number {
  const started = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    m.observer.onDescriptor(REPORTS[0]!);
    m.observer.onDescriptor(REPORTS[1]!);
    m.observer.onDecision('edge', false, 0.2);
    m.grpcRequestDuration.observe({ method: 'ShouldRateLimit' }, 0.0004);
    m.reference?.onCall('ShouldRateLimit', 0.0004);
  }
  const used = process.cpuUsage(started);
  return ((used.user + used.system) * 1000) / n;
}

const subjects = { A: subject('A'), B: subject('B'), C: subject('C') };
for (const m of Object.values(subjects)) run(m, 20_000); // warm up
const ratios: { B: number[]; C: number[] } = { B: [], C: [] };
for (let r = 0; r < rounds; r++) {
  const order: ('A' | 'B' | 'C')[] = r % 2 === 0 ? ['A', 'B', 'C'] : ['C', 'B', 'A'];
  const ns: Record<string, number> = {};
  for (const k of order) ns[k] = run(subjects[k], requests);
  ratios.B.push(ns['B']! / ns['A']!);
  ratios.C.push(ns['C']! / ns['A']!);
  console.log(
    `round ${r + 1}: A ${ns['A']!.toFixed(0)} ns/req | B ${ns['B']!.toFixed(0)} ns/req | C ${ns['C']!.toFixed(0)} ns/req | B/A ${(ns['B']! / ns['A']!).toFixed(3)} | C/A ${(ns['C']! / ns['A']!).toFixed(3)}`,
  );
}
console.log(
  `median B/A ${median(ratios.B).toFixed(3)} (reference stats off), C/A ${median(ratios.C).toFixed(3)} (Envoy Gateway's mapping on); ${args.argv.join(' ')}`,
);

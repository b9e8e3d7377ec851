/**
 * The Redis section of `npm run bench`: starts envoyproxy/ratelimit and this service, each on a
 * redis-server of its own with the same rules, runs the side-by-side (redis-side-by-side.ts) and returns the
 * printed table, its notes and the raw samples. This service runs with the V8 options `npm start` ships
 * (START_NODE_OPTIONS); `nodeOptionVariants` add it again with other V8 options, to measure that lever alone.
 */
import { startRedis, type RedisServer } from '../../test/support/redis.js';
import { fmt, median, ratioText, table } from './stats.js';
import { haveReference, redisPid, startReference } from './reference.js';
import { counter, startOurs, type Target } from './servers.js';
import { marginal, ratios, sideBySide, type SideSample, type SideSamples, type SideTarget } from './redis-side-by-side.js';
import { rssBytes, treeCpuSeconds } from './proc-cpu.js';
import { START_NODE_OPTIONS } from './image.js';

export { START_ENV, START_NODE_OPTIONS } from './image.js';

export interface RedisSectionSpec {
  readonly rulesDir: string;
  readonly bodies: { '1 descriptor': Uint8Array; '3 descriptors': Uint8Array };
  readonly requests: number;
  readonly clients: number;
  readonly streams: number;
  readonly rounds: number;
  /** Fixed-rate p99: total req/s (over 2 connections) and seconds. */
  readonly rate: number;
  readonly rateSeconds: number;
  /** More runs of this service with other NODE_OPTIONS ('' = V8's defaults), to measure the young generation alone. */
  readonly nodeOptionVariants: readonly string[];
  readonly dir: string;
  /** Extra environment for this service (e.g. a setting under test). */
  readonly env?: Record<string, string>;
}

export interface RedisSection {
  readonly text: string;
  readonly notes: string[];
  readonly samples: Record<string, Record<string, SideSample[]>>;
  readonly fixedRate?: Record<string, Record<string, SideSample[]>>;
}

const us = (xs: readonly number[]) => (xs.length === 0 || !xs.every(Number.isFinite) ? 'n/a' : fmt(median(xs), 1));

export async function redisSection(spec: RedisSectionSpec): Promise<RedisSection> {
  const notes: string[] = [];
  if (!haveReference())
    return { text: '', notes: ['envoyproxy/ratelimit not found (../shared/tools/envoy-ratelimit): Redis side-by-side skipped'], samples: {} };
  const redises: RedisServer[] = [];
  const started: Target[] = [];
  try {
    const redisFor = async () => {
      const r = await startRedis();
      redises.push(r);
      return r;
    };
    const targets: SideTarget[] = [];
    const ours: Target[] = [];
    const refRedis = await redisFor();
    const ref = await startReference(spec.rulesDir, `127.0.0.1:${refRedis.port}`);
    started.push(ref);
    targets.push({ key: 'reference', label: 'envoyproxy/ratelimit', address: ref.address, pid: ref.pid, redisPid: await redisPid(refRedis.port) });
    const variants: [string, string, string][] = [['ours', `this service (NODE_OPTIONS=${START_NODE_OPTIONS}, as npm start)`, START_NODE_OPTIONS]];
    for (const o of spec.nodeOptionVariants) variants.push([`ours ${o}`, `this service (NODE_OPTIONS=${o === '' ? "''" : o})`, o]);
    for (const [key, label, nodeOptions] of variants) {
      const r = await redisFor();
      const t = await startOurs(key, { CONFIG_DIR: spec.rulesDir, BACKEND: 'redis', REDIS_URL: r.url, NODE_OPTIONS: nodeOptions, ...spec.env });
      started.push(t);
      ours.push(t);
      targets.push({ key, label, address: t.address, pid: t.pid, redisPid: await redisPid(r.port) });
    }
    const fallbacks0 = await Promise.all(ours.map((t) => counter(t, 'ratelimit_store_fallbacks_total')));
    const samples = await sideBySide(targets, {
      bodies: spec.bodies,
      requests: spec.requests,
      clients: spec.clients,
      streams: spec.streams,
      rounds: spec.rounds,
      dir: spec.dir,
    });
    for (const t of targets)
      if (!Number.isFinite(treeCpuSeconds(t.pid))) notes.push(`${t.label} is no longer running: its figures after it stopped are not measurements`);
    // Answers by FAILURE_MODE (the store missed the request's deadline) are not decisions: say how many there were.
    for (const [i, t] of ours.entries()) {
      const n = (await counter(t, 'ratelimit_store_fallbacks_total')) - fallbacks0[i]!;
      if (n > 0) notes.push(`${targets[i + 1]!.label}: ${n} answers by FAILURE_MODE during the closed-loop runs (the store missed the 1 s deadline)`);
    }
    const rss = targets.map((t) => `${t.label} ${fmt(rssBytes(t.pid) / 2 ** 20)} MiB`);
    notes.push(`RSS after the closed-loop runs: ${rss.join('; ')}`);
    const fixed = await sideBySide(
      targets.slice(0, 2),
      {
        bodies: { '1 descriptor': spec.bodies['1 descriptor'] },
        requests: spec.rate * spec.rateSeconds,
        clients: 2,
        streams: 100,
        rounds: spec.rounds,
        dir: spec.dir,
      },
      spec.rate / 2,
    );
    for (const [key, m] of [...samples, ...fixed])
      for (const [shape, xs] of m)
        for (const x of xs) if (x.ok !== x.sent) notes.push(`${key}, ${shape}: ${x.sent - x.ok} of ${x.sent} responses not HTTP 200`);
    const text = render(targets, samples, fixed, spec);
    return { text, notes, samples: plain(samples), fixedRate: plain(fixed) };
  } finally {
    for (const t of started) await t.stop();
    for (const r of redises) await r.stop();
  }
}

function plain(s: SideSamples): Record<string, Record<string, SideSample[]>> {
  return Object.fromEntries([...s].map(([k, m]) => [k, Object.fromEntries(m)]));
}

function render(targets: readonly SideTarget[], s: SideSamples, fixed: SideSamples, spec: RedisSectionSpec): string {
  const ref = s.get('reference')!;
  const rows: string[][] = [];
  for (const shape of Object.keys(spec.bodies)) {
    for (const t of targets) {
      const xs = s.get(t.key)!.get(shape)!;
      const base = ref.get(shape)!;
      const isRef = t.key === 'reference';
      rows.push([
        shape,
        t.label,
        fmt(median(xs.map((x) => x.rps))),
        us(xs.map((x) => x.cpuUs)),
        us(xs.map((x) => x.redisCpuUs)),
        isRef ? '' : ratioText(ratios(xs, base, (x) => x.rps)),
        isRef ? '' : ratioText(ratios(xs, base, (x) => x.cpuUs)),
        isRef ? '' : ratioText(ratios(xs, base, (x) => x.redisCpuUs)),
      ]);
    }
  }
  for (const t of targets) {
    const m = s.get(t.key)!;
    const one = m.get('1 descriptor')!;
    const three = m.get('3 descriptors')!;
    rows.push([
      '+1 descriptor (marginal)',
      t.label,
      '',
      fmt(
        marginal(one, three, (x) => x.cpuUs),
        1,
      ),
      fmt(
        marginal(one, three, (x) => x.redisCpuUs),
        1,
      ),
      '',
      '',
      '',
    ]);
  }
  for (const t of targets.slice(0, 2)) {
    const xs = fixed.get(t.key)!.get('1 descriptor')!;
    rows.push([
      `1 descriptor, fixed ${fmt(spec.rate)} req/s: p99 ${median(xs.map((x) => x.p99)).toFixed(2)} ms`,
      t.label,
      fmt(median(xs.map((x) => x.rps))),
      us(xs.map((x) => x.cpuUs)),
      us(xs.map((x) => x.redisCpuUs)),
      '',
      '',
      '',
    ]);
  }
  const head = `h2load -c${spec.clients} -m${spec.streams} -n ${fmt(spec.requests)} per run, ${spec.rounds} round(s) alternated; each server on its own redis-server; CPU of each process tree from /proc; ratios are per round, ours / reference, median (range)`;
  return `${head}\n${table(['descriptors', 'server', 'req/s (median)', 'server CPU µs/req', 'its Redis CPU µs/req', 'req/s ratio', 'server CPU ratio', 'Redis CPU ratio'], rows)}`;
}

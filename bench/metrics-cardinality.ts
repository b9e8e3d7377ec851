/**
 * Metric cardinality under hostile traffic: the real service in its own process (`ratelimit serve`, memory
 * store), sent ShouldRateLimit calls naming random domains (some 3,000 characters long) and descriptors with
 * fresh values under a detailed_metric rule. Prints the /metrics size and series counts before and after, so
 * the bound (one `unknown` domain; METRICS_MAX_DETAILED_SERIES keys per domain, then `other`) shows as figures.
 *
 *   npx tsx bench/metrics-cardinality.ts [--domains 5000] [--users 5000] [--max-detailed 1000] [--concurrency 32]
 */
import { RawRlsClient } from '../test/support/raw-rls.js';
import { startImage } from './lib/servers.js';
import { rulesFolder } from '../test/support/rules-folder.js';
import { benchArgs } from './lib/args.js';

const args = benchArgs('bench/metrics-cardinality.ts', { domains: 'string', users: 'string', 'max-detailed': 'string', concurrency: 'string' });
const domains = args.num('domains', 5000);
const users = args.num('users', 5000);
const maxDetailed = args.str('max-detailed', '1000');
const concurrency = args.num('concurrency', 32);

const RULES = `domain: web
descriptors:
  - key: api_key
    rate_limit: {unit: minute, requests_per_unit: 1000}
  - key: user
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 1000}
`;

const rules = rulesFolder('rl-bench-');
const dir = rules.write({ 'web.yaml': RULES });
const service = await startImage({ CONFIG_DIR: dir, BACKEND: 'memory', METRICS_MAX_DETAILED_SERIES: maxDetailed });
const client = new RawRlsClient(service.grpcAddress);

async function scrape(): Promise<{ bytes: number; series: number; longest: number; domainValues: number; keyValues: number; rssMiB: number }> {
  const text = await (await fetch(`http://${service.httpAddress}/metrics`)).text();
  const samples = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
  const rss = Number(/^ratelimit_process_resident_memory_bytes (\S+)$/m.exec(text)?.[1] ?? 0);
  return {
    bytes: text.length,
    series: samples.length,
    longest: Math.max(...samples.map((l) => l.length)),
    domainValues: new Set([...text.matchAll(/domain="([^"]*)"/g)].map((m) => m[1])).size,
    keyValues: new Set([...text.matchAll(/key="([^"]*)"/g)].map((m) => m[1])).size,
    rssMiB: Math.round((rss / 2 ** 20) * 10) / 10,
  };
}

async function send(n: number, make: (i: number) => Promise<unknown>): Promise<number> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await make(next++);
    }),
  );
  return Math.round(performance.now() - started);
}

try {
  console.log(`# metrics cardinality, memory store, node ${process.version}, METRICS_MAX_DETAILED_SERIES=${maxDetailed}`);
  console.log(`# command: npx tsx bench/metrics-cardinality.ts ${args.argv.join(' ')}`.trimEnd());
  const row = (label: string, s: Awaited<ReturnType<typeof scrape>>) =>
    console.log(
      `${label.padEnd(44)} ${String(s.series).padStart(7)} series ${String(s.bytes).padStart(9)} bytes  longest line ${String(s.longest).padStart(5)}  domain values ${String(s.domainValues).padStart(5)}  key values ${String(s.keyValues).padStart(5)}  rss ${s.rssMiB} MiB`,
    );
  row('at start', await scrape());
  // One domain in ten is longer than a key may be: refused (RESOURCE_EXHAUSTED), and counted here, never in the metrics.
  let refused = 0;
  const tDomains = await send(domains, (i) =>
    client.call(i % 10 === 0 ? `d${i}-${'x'.repeat(3000)}` : `random-${i}`, [{ entries: [['api_key', 'k']] }]).catch(() => refused++),
  );
  row(`after ${domains} random domains, ${refused} refused (${tDomains} ms)`, await scrape());
  const tUsers = await send(users, (i) => client.call('web', [{ entries: [['user', `user-${i}-${'v'.repeat(64)}`]] }], 1));
  row(`after ${users} distinct detailed users (${tUsers} ms)`, await scrape());
} finally {
  client.close();
  await service.stop();
  rules.remove();
}

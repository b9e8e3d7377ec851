/**
 * The two gRPC transports side by side (GRPC_TRANSPORT=lean and grpc-js), each `ratelimit serve` as the image
 * runs it (memory store), in one run, alternating round by round:
 *
 * - h2load straight at the port, closed loop (clients × streams in flight): req/s, p50/p99, server CPU µs per
 *   request from /proc, for one and three descriptors;
 * - h2load at a fixed rate (2 connections, as a proxy holds them): server CPU µs per request;
 * - through Envoy (--envoy, when ENVOY_BIN or `npm run envoy:install` gives one): one Envoy per transport,
 *   h2load GET / at Envoy, service CPU µs per request;
 * - RSS at rest (after start, before any call) and after the load.
 *
 *   npx tsx bench/grpc-transports.ts [--rounds 5] [--requests 60000] [--clients 8] [--streams 16] [--rate 4000] [--rate-seconds 5] [--envoy]
 *
 * Bounded: fixed request counts, 127.0.0.1 only. Compare the columns of one run, not across machines.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { rlsBootstrap } from '../test/support/envoy-bootstrap.js';
import { envoyBinary, startEnvoy, type EnvoyProcess } from '../test/support/envoy.js';
import { encodeRequest } from '../test/support/raw-rls.js';
import { h2load } from './lib/h2load.js';
import { rssBytes, treeCpuSeconds } from './lib/proc-cpu.js';
import { startOurs, type Target } from './lib/servers.js';
import { fmt, median, table } from './lib/stats.js';

const { values: a } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    requests: { type: 'string', default: '60000' },
    clients: { type: 'string', default: '8' },
    streams: { type: 'string', default: '16' },
    rate: { type: 'string', default: '4000' },
    'rate-seconds': { type: 'string', default: '5' },
    envoy: { type: 'boolean', default: false },
  },
});
const run = promisify(execFile);
const ROUNDS = Number(a.rounds);
const REQUESTS = Number(a.requests);
const CLIENTS = Number(a.clients);
const STREAMS = Number(a.streams);
const RATE = Number(a.rate);
const RATE_SECONDS = Number(a['rate-seconds']);

const BODIES = {
  '1 descriptor': encodeRequest('bench', [{ entries: [['user', 'alice']] }]),
  '3 descriptors': encodeRequest('bench', [{ entries: [['user', 'alice']] }, { entries: [['ip', '10.0.0.1']] }, { entries: [['path', '/api']] }]),
};
const RULES = `${readFileSync(new URL('./rules/bench.yaml', import.meta.url), 'utf8')}  - key: generic_key\n    value: bench\n    rate_limit: {unit: second, requests_per_unit: 1000000000}\n`;
const TRANSPORTS = ['lean', 'grpc-js'] as const;
type Transport = (typeof TRANSPORTS)[number];

const dir = mkdtempSync(join(tmpdir(), 'rl-bench-transports-'));
writeFileSync(join(dir, 'bench.yaml'), RULES);
const samples = new Map<string, number[]>();
const add = (key: string, v: number) => samples.set(key, [...(samples.get(key) ?? []), v]);
const med = (key: string, digits = 0) => (samples.has(key) ? fmt(median(samples.get(key)!), digits) : '—');
const notes: string[] = [];
const servers = new Map<Transport, Target>();
const envoys = new Map<Transport, { envoy: EnvoyProcess; port: number }>();
const upstream = createServer((_req, res) => res.end('ok\n'));
let commands: string[] = [];

/** Runs `fn` and adds the server's CPU µs per answered request under `key`. */
async function cpuOf(t: Transport, key: string, fn: () => Promise<{ ok: number; sent: number }>): Promise<void> {
  const pid = servers.get(t)!.pid;
  const before = treeCpuSeconds(pid);
  const r = await fn();
  if (r.ok !== r.sent || r.ok === 0) notes.push(`${t}, ${key}: ${r.sent - r.ok} of ${r.sent} answers not HTTP 200`);
  add(`${t}|${key}|cpu`, ((treeCpuSeconds(pid) - before) * 1e6) / r.ok);
}

async function throughEnvoy(port: number): Promise<{ ok: number; sent: number; rps: number }> {
  // Not execFileSync: the upstream Envoy forwards to is served by this process.
  const { stdout: out } = await run('h2load', ['-n', String(REQUESTS / 2), '-c', '16', '-m', '4', `http://127.0.0.1:${port}/`], { maxBuffer: 1 << 24 });
  return { rps: Number(/([\d.]+) req\/s/.exec(out)?.[1] ?? NaN), ok: Number(/(\d+) 2xx/.exec(out)?.[1] ?? 0), sent: Number(/requests: (\d+) total/.exec(out)?.[1] ?? 0) };
}

try {
  for (const t of TRANSPORTS) {
    const s = await startOurs(t, { CONFIG_DIR: dir, GRPC_TRANSPORT: t });
    servers.set(t, s);
  }
  await new Promise((r) => setTimeout(r, 2000)); // both idle: start-up work done
  for (const t of TRANSPORTS) add(`${t}|rss-rest`, rssBytes(servers.get(t)!.pid) / 2 ** 20);
  const useEnvoy = a.envoy && envoyBinary() !== undefined;
  if (a.envoy && !useEnvoy) notes.push('no Envoy (ENVOY_BIN / npm run envoy:install): the Envoy rows are skipped');
  if (useEnvoy) {
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    for (const t of TRANSPORTS) {
      const [host, port] = servers.get(t)!.address.split(':') as [string, string];
      const envoy = await startEnvoy(rlsBootstrap({ service: { address: host, port: Number(port) }, upstream: { address: '127.0.0.1', port: (upstream.address() as AddressInfo).port }, domain: 'bench', routes: [{ prefix: '/', rateLimits: [{ actions: [{ generic_key: { descriptor_value: 'bench' } }] }] }], filter: { timeout: '1s' } }));
      envoys.set(t, { envoy, port: await envoy.listenerPort('ingress') });
    }
  }
  // Warm-up: connections, JIT.
  for (const t of TRANSPORTS) for (const body of Object.values(BODIES)) await h2load({ address: servers.get(t)!.address, body, requests: 10_000, clients: CLIENTS, streams: STREAMS, dir });
  for (const t of TRANSPORTS) if (envoys.has(t)) await throughEnvoy(envoys.get(t)!.port);
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? TRANSPORTS : [...TRANSPORTS].reverse();
    for (const t of order) {
      const address = servers.get(t)!.address;
      for (const [shape, body] of Object.entries(BODIES)) {
        await cpuOf(t, shape, async () => {
          const r = await h2load({ address, body, requests: REQUESTS, clients: CLIENTS, streams: STREAMS, dir });
          add(`${t}|${shape}|rps`, r.rps);
          add(`${t}|${shape}|p50`, r.p50);
          add(`${t}|${shape}|p99`, r.p99);
          commands = [...new Set([...commands, r.command])];
          return r;
        });
      }
      await cpuOf(t, 'fixed', async () => {
        const r = await h2load({ address, body: BODIES['1 descriptor'], requests: (RATE / 2) * RATE_SECONDS, clients: 2, streams: 100, rps: RATE / 2, dir });
        add(`${t}|fixed|p99`, r.p99);
        commands = [...new Set([...commands, r.command])];
        return r;
      });
      const e = envoys.get(t);
      if (e !== undefined) {
        await cpuOf(t, 'envoy', async () => {
          const r = await throughEnvoy(e.port);
          add(`${t}|envoy|rps`, r.rps);
          return r;
        });
      }
    }
  }
  for (const t of TRANSPORTS) add(`${t}|rss-load`, rssBytes(servers.get(t)!.pid) / 2 ** 20);
} finally {
  for (const e of envoys.values()) await e.envoy.stop();
  for (const s of servers.values()) await s.stop();
  upstream.close();
  rmSync(dir, { recursive: true, force: true });
}

const row = (name: string, key: string, digits = 0) => [name, ...TRANSPORTS.map((t) => med(`${t}|${key}`, digits))];
const rows = [
  ...Object.keys(BODIES).flatMap((shape) => [
    row(`closed loop ${shape}: req/s`, `${shape}|rps`),
    row(`closed loop ${shape}: server CPU µs/req`, `${shape}|cpu`, 1),
    row(`closed loop ${shape}: p50 / p99 ms`, `${shape}|p50`, 2).map((c, i) => (i === 0 ? c : `${c} / ${med(`${TRANSPORTS[i - 1]!}|${shape}|p99`, 2)}`)),
  ]),
  row(`fixed ${fmt(RATE)} req/s, 2 connections: server CPU µs/req`, 'fixed|cpu', 1),
  row(`fixed ${fmt(RATE)} req/s: p99 ms`, 'fixed|p99', 2),
  row('through Envoy (h2load -c16 -m4 GET /): req/s', 'envoy|rps'),
  row('through Envoy: service CPU µs/req', 'envoy|cpu', 1),
  row('RSS at rest, MiB', 'rss-rest', 1),
  row('RSS after the load, MiB', 'rss-load', 1),
];
console.log(`# npx tsx bench/grpc-transports.ts ${process.argv.slice(2).join(' ')}`.trimEnd());
console.log(`# ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}; ${ROUNDS} rounds alternated, medians${envoys.size > 0 ? `; Envoy ${envoyBinary()!.version}` : ''}\n`);
console.log(table(['figure', ...TRANSPORTS], rows));
for (const c of commands) console.log(`- ${c}`);
for (const n of notes) console.log(`- note: ${n}`);

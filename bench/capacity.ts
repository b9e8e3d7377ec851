/**
 * GetCapacity cost with 10, 1,000 and 10,000 clients on one FAIR_SHARE resource: our capacity service (memory
 * store) side by side with the real Doorman server (../shared/tools/doorman or DOORMAN_BIN), rounds alternating.
 * Each round fills the resource with N clients (wants 1..100, capacity 20 × N, so the resource is
 * oversubscribed and FAIR_SHARE runs both rounds), then h2load replays one client's refresh as fast as the
 * server answers. Reported: req/s and server CPU per request (user + system from /proc: the steadier figure).
 *
 * With `--backend memory,redis,redis2` our service also runs on BACKEND=redis: one replica (redis), or two
 * replicas on one redis-server (redis2) each loaded with half the requests (one client each, same resource);
 * their CPU per request is the services' and Redis's, shown apart.
 *
 * `--doorman off` leaves the real Doorman out (its columns then read NaN): it answers about 300 calls a second at
 * 8,000 clients, so it takes most of a run's time when our service alone is being tuned.
 *
 *   npx tsx bench/capacity.ts [--requests 20000] [--warmup 2000] [--rounds 2] [--clients 10,1000,10000] [--backend memory] [--doorman off]
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { methodCodec } from '../src/capacity/doorman-messages.js';
import { capacityCaller, doormanTool, startDoorman } from '../test/support/capacity-peers.js';
import { benchArgs } from './lib/args.js';
import { startCapacityOnRedis } from './lib/capacity-redis.js';
import { h2load } from './lib/h2load.js';
import { cpuSeconds, startOurs, type Target } from './lib/servers.js';
import { fmt, median, table } from './lib/stats.js';

const args = benchArgs('bench/capacity.ts', {
  requests: 'string',
  rounds: 'string',
  warmup: 'string',
  clients: 'string',
  backend: 'string',
  doorman: 'string',
});
const REQUESTS = args.num('requests', 20000);
const ROUNDS = args.num('rounds', 2);
const WARMUP = args.num('warmup', 2000);
const CLIENTS = args.str('clients', '10,1000,10000').split(',').map(Number);
/** Our service's stores to measure: memory (the 'ours' columns), redis (one replica), redis2 (two replicas). */
const BACKENDS = args.str('backend', 'memory').split(',');
const REDIS_TARGETS = BACKENDS.filter((b) => b === 'redis' || b === 'redis2');
const WITH_DOORMAN = args.str('doorman', 'on') !== 'off';

const config = (capacity: number) => `resources:
  - identifier_glob: "*"
    capacity: ${capacity}
    algorithm: {kind: FAIR_SHARE, lease_length: 600, refresh_interval: 60, learning_mode_duration: 0}
`;

async function fill(address: string, n: number): Promise<void> {
  const caller = capacityCaller(address);
  try {
    for (let i = 0; i < n; i += 200) {
      await Promise.all(
        Array.from({ length: Math.min(200, n - i) }, (_, k) =>
          caller.call('GetCapacity', { client_id: `c${i + k}`, resource: [{ resource_id: 'bench', priority: 1, wants: 1 + (((i + k) * 37) % 100) }] }, 60_000),
        ),
      );
    }
  } finally {
    caller.close();
  }
}

/** h2load on every address at once (one client each, `requests` in all); CPU of `pids`, and of `redisPid` apart. */
async function loadAll(
  addresses: string[],
  pids: (number | undefined)[],
  redisPid: number,
  dir: string,
  requests = REQUESTS,
): Promise<{ rps: number; cpuUs: number; redisCpuUs: number; ok: number }> {
  const cpu = (): number => pids.reduce((sum: number, pid) => sum + cpuSeconds(pid), 0);
  const [cpu0, redis0] = [cpu(), cpuSeconds(redisPid)];
  const each = await Promise.all(addresses.map((a, i) => load(a, undefined, dir, Math.floor(requests / addresses.length), `c${i}`)));
  const n = Math.floor(requests / addresses.length) * addresses.length;
  return {
    rps: each.reduce((x, r) => x + r.rps, 0),
    cpuUs: ((cpu() - cpu0) / n) * 1e6,
    redisCpuUs: ((cpuSeconds(redisPid) - redis0) / n) * 1e6,
    ok: each.reduce((x, r) => x + r.ok, 0),
  };
}

async function load(
  address: string,
  pid: number | undefined,
  dir: string,
  requests = REQUESTS,
  client = 'c0',
): Promise<{ rps: number; cpuUs: number; ok: number; command: string }> {
  const body = methodCodec('GetCapacity').encodeRequest({
    client_id: client,
    resource: [{ resource_id: 'bench', priority: 1, wants: 1000, has: { expiry_time: 1, refresh_interval: 60, capacity: 0 } }],
  });
  const cpu0 = cpuSeconds(pid);
  const { rps, ok, command } = await h2load({ address, body, path: '/doorman.Capacity/GetCapacity', requests, clients: 4, streams: 16, timeoutMs: null, dir });
  const cpu = cpuSeconds(pid) - cpu0;
  // h2load sees HTTP statuses only: one call checks that the answer is a grant, not a gRPC error.
  const caller = capacityCaller(address);
  try {
    await caller.call('GetCapacity', { client_id: client, resource: [{ resource_id: 'bench', priority: 1, wants: 1000 }] });
  } finally {
    caller.close();
  }
  return { rps, cpuUs: (cpu / requests) * 1e6, ok, command };
}

async function main(): Promise<void> {
  if (WITH_DOORMAN && doormanTool('doorman') === undefined) throw new Error('the real Doorman is needed (DOORMAN_BIN or ../shared/tools/doorman)');
  const dir = mkdtempSync(join(tmpdir(), 'capacity-bench-'));
  const rules = mkdtempSync(join(tmpdir(), 'capacity-bench-rules-'));
  const rows: string[][] = [];
  const redisRows: string[][] = [];
  let command = '';
  try {
    for (const n of CLIENTS) {
      const results: Record<string, { rps: number[]; cpu: number[]; redisCpu: number[] }> = {
        ours: { rps: [], cpu: [], redisCpu: [] },
        doorman: { rps: [], cpu: [], redisCpu: [] },
      };
      for (const t of REDIS_TARGETS) results[t] = { rps: [], cpu: [], redisCpu: [] };
      for (let round = 0; round < ROUNDS; round++) {
        const order = ['ours', ...(WITH_DOORMAN ? ['doorman'] : []), ...REDIS_TARGETS];
        for (const who of round % 2 === 0 ? order : order.reverse()) {
          if (who === 'redis' || who === 'redis2') {
            await measureRedis(who, n, dir, rules, results[who]!);
            continue;
          }
          const file = join(dir, 'resources.yaml');
          writeFileSync(file, config(20 * n));
          let target: Target;
          if (who === 'ours') target = await startOurs('ours', { CAPACITY_CONFIG: file, CONFIG_DIR: rules });
          else {
            const d = await startDoorman(readFileSync(file, 'utf8'));
            target = { name: 'doorman', address: d.address, ...(d.process.pid === undefined ? {} : { pid: d.process.pid }), stop: () => d.close() };
          }
          try {
            await fill(target.address, n);
            await load(target.address, target.pid, dir, WARMUP); // JIT warm-up, not measured
            const r = await load(target.address, target.pid, dir);
            if (r.ok !== REQUESTS) throw new Error(`${who}: ${r.ok} of ${REQUESTS} answered 2xx`);
            results[who]!.rps.push(r.rps);
            results[who]!.cpu.push(r.cpuUs);
            command = r.command;
          } finally {
            await target.stop();
          }
        }
      }
      const o = results['ours']!;
      const d = results['doorman']!;
      rows.push([
        fmt(n),
        fmt(median(o.rps)),
        fmt(median(o.cpu), 1),
        fmt(median(d.rps)),
        fmt(median(d.cpu), 1),
        WITH_DOORMAN ? `${fmt(median(d.cpu) / median(o.cpu), 1)}×` : 'n/a',
      ]);
      process.stderr.write(`${rows[rows.length - 1]!.join(' | ')}\n`); // progress: a row per client count
      for (const t of REDIS_TARGETS) {
        const r = results[t]!;
        redisRows.push([
          fmt(n),
          t === 'redis' ? '1 replica' : '2 replicas',
          fmt(median(r.rps)),
          fmt(median(r.cpu), 1),
          fmt(median(r.redisCpu), 1),
          fmt(median(o.cpu), 1),
          fmt(median(d.cpu), 1),
        ]);
        process.stderr.write(`${redisRows[redisRows.length - 1]!.join(' | ')}\n`);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(rules, { recursive: true, force: true });
  }
  process.stdout.write(
    `${table(['clients on the resource', 'ours req/s', 'ours CPU µs/req', 'Doorman req/s', 'Doorman CPU µs/req', 'Doorman CPU ÷ ours'], rows)}\n\n`,
  );
  if (redisRows.length > 0) {
    process.stdout.write(
      `${table(['clients on the resource', 'BACKEND=redis', 'req/s (all replicas)', 'services CPU µs/req', 'redis-server CPU µs/req', 'memory store CPU µs/req', 'Doorman CPU µs/req'], redisRows)}\n\n`,
    );
  }
  process.stdout.write(`medians of ${ROUNDS} alternating rounds; load: ${command}\n`);
}

/** One round of our service on BACKEND=redis with `who` (redis: one replica, redis2: two) at `n` clients. */
async function measureRedis(who: string, n: number, dir: string, rules: string, into: { rps: number[]; cpu: number[]; redisCpu: number[] }): Promise<void> {
  const file = join(dir, 'resources.yaml');
  writeFileSync(file, config(20 * n));
  const target = await startCapacityOnRedis(who === 'redis2' ? 2 : 1, { CAPACITY_CONFIG: file, CONFIG_DIR: rules });
  try {
    await fill(target.addresses[0]!, n);
    await loadAll(target.addresses, target.pids, target.redisPid, dir, WARMUP);
    const r = await loadAll(target.addresses, target.pids, target.redisPid, dir);
    const sent = Math.floor(REQUESTS / target.addresses.length) * target.addresses.length;
    if (r.ok !== sent) throw new Error(`${who}: ${r.ok} of ${sent} answered 2xx`);
    into.rps.push(r.rps);
    into.cpu.push(r.cpuUs);
    into.redisCpu.push(r.redisCpuUs);
  } finally {
    await target.stop();
  }
}

await main();

/**
 * The rows of the fail-open audit: each an event run against a fresh stack (stack.ts) while the probe asks for
 * `/limited`, LIMIT + 1 times on each of its keys (downstream.ts). Measured per row and side:
 * - no decision: Envoy's `cluster.app.ratelimit.failure_mode_allowed` (each call that ended in an error and was
 *   let through; Envoy counts the same call in `ratelimit.error` too, so the two are not added);
 * - over limit: probe requests admitted (200) beyond the limit of their key.
 */
import { rawCommand } from '../../../test/support/redis.js';
import { scrapeMetrics, total } from '../../../test/support/scrape.js';
import { eventually } from '../../../test/support/eventually.js';
import { concurrentProbes, idleConnections, Prober, type ResetResult } from './downstream.js';
import { inChildProcess } from './load-process.js';
import { auditRules, RULES_FILE, startAuditStack, type AuditStack } from './stack.js';
import type { Side } from './targets.js';
import { MEMCACHED_ROWS } from './rows-memcached.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface RowContext {
  readonly stack: AuditStack;
  readonly probe: Prober;
  readonly quick: boolean;
  /** What the row saw besides the counts (attack sizes, down times), for the report. */
  note(text: string): void;
}

export interface AuditRow {
  readonly id: string;
  readonly event: string;
  /** The counters in this row (the reference is on Redis where this service is on memory). */
  readonly store: 'memory' | 'redis' | 'sentinel' | 'memcached';
  readonly replicas?: 2;
  /** This service's settings for the row (quick runs shorten the drain). */
  env?(quick: boolean): Record<string, string>;
  /** Settings both servers read under the same (the reference's) name. */
  readonly sharedEnv?: Record<string, string>;
  /** Probes after the event (default 5); 0 where no server is left to answer. */
  readonly after?: number;
  run(ctx: RowContext): Promise<void>;
}

export interface RowResult {
  readonly noDecision: number;
  /** Envoy's `ratelimit.error` (equal to noDecision behind failure_mode_deny: false). */
  readonly errors: number;
  readonly overLimit: number;
  readonly probes: number;
  readonly notes: string[];
}

/** This service's drain: the default 5 s, or in quick runs 3 s (still longer than Envoy's 2 s timeout). */
const drainMs = (quick: boolean) => (quick ? 3000 : 5000);
const drainEnv = (quick: boolean) => ({ SHUTDOWN_DRAIN_MS: String(drainMs(quick)), SHUTDOWN_GRACE_MS: '2000' });

/**
 * SIGTERM to replica 0, probing while it says it still takes calls (ours: its drain; the reference: until exit);
 * resolves once it has exited.
 */
async function drain(ctx: RowContext): Promise<void> {
  const replica = ctx.stack.replicas[0]!;
  const t0 = Date.now();
  const exited = replica.stop();
  let gone = false;
  void exited.then(() => (gone = true));
  // stop probing before the drain ends (a probe is two requests, slow on a loaded machine): after the drain the
  // server refuses new calls by design
  while (!gone && Date.now() - t0 < drainMs(ctx.quick) - 500) await sleep(10);
  await ctx.probe.pause();
  ctx.note(`probed ${Date.now() - t0} ms after SIGTERM${gone ? ' (until exit)' : ''}`);
  await exited;
}

export const ROWS: readonly AuditRow[] = [
  {
    id: 'rapid-reset',
    event: 'downstream HTTP/2 rapid reset at Envoy (HEADERS + RST_STREAM)',
    // Redis, like the reference: a call then waits for a round trip, as most do in production
    store: 'redis',
    async run(ctx) {
      const r = await inChildProcess<ResetResult>(
        'rapid-reset',
        ctx.stack.port,
        ctx.quick ? { durationMs: 3000, connections: 2, maxResets: 100_000 } : { durationMs: 8000, connections: 2, maxResets: 300_000 },
      );
      ctx.note(`${r.resets} resets on ${r.connections} connections`);
      await sleep(1000);
    },
  },
  {
    id: 'disconnect',
    event: 'downstream clients disconnecting mid-request, 2,000 req/s',
    // Redis, like the reference: a call then waits for a round trip, as most do in production
    store: 'redis',
    async run(ctx) {
      const r = await inChildProcess<{ sent: number; skipped: number }>('disconnect', ctx.stack.port, {
        ratePerS: 2000,
        durationMs: ctx.quick ? 2500 : 5000,
        maxInFlight: 500,
      });
      ctx.note(`${r.sent} requests cut${r.skipped > 0 ? `, ${r.skipped} not sent (500 in flight)` : ''}`);
    },
  },
  {
    id: 'drain-memory',
    event: 'SIGTERM drain, memory',
    store: 'memory',
    env: drainEnv,
    after: 0,
    async run(ctx) {
      await drain(ctx);
    },
  },
  {
    id: 'drain-redis',
    event: 'SIGTERM drain, Redis',
    store: 'redis',
    env: drainEnv,
    after: 0,
    async run(ctx) {
      await drain(ctx);
    },
  },
  {
    id: 'restart',
    event: 'restart in place (stop, start), Redis',
    store: 'redis',
    env: drainEnv,
    async run(ctx) {
      await drain(ctx);
      const t0 = Date.now();
      await ctx.stack.replicas[0]!.start();
      ctx.note(`no server for ${Date.now() - t0} ms (not probed)`);
      ctx.probe.resume();
      await sleep(1000);
    },
  },
  {
    id: 'rolling',
    event: 'rolling restart, two replicas behind one Envoy cluster, Redis',
    store: 'redis',
    replicas: 2,
    // Envoy's health checks (every 100 ms) take a draining replica out well within 1.5 s, even on a loaded machine;
    // 600 ms was too short there (calls reached a replica that had stopped taking them)
    env: (quick) => ({ SHUTDOWN_DRAIN_MS: quick ? '1500' : '5000', SHUTDOWN_GRACE_MS: '2000' }),
    async run(ctx) {
      for (const replica of ctx.stack.replicas) {
        await replica.stop();
        await replica.start();
        await ctx.stack.healthy(2);
      }
    },
  },
  {
    id: 'connection-age',
    event: 'connections aged out every second (GRPC_MAX_CONNECTION_AGE=1s, _GRACE=2s), Redis',
    store: 'redis',
    sharedEnv: { GRPC_MAX_CONNECTION_AGE: '1s', GRPC_MAX_CONNECTION_AGE_GRACE: '2s' },
    async run(ctx) {
      // several ages (0.9 s to 1.1 s each) while the probe runs: Envoy reconnects after each GOAWAY
      await sleep(ctx.quick ? 3500 : 8000);
    },
  },
  {
    id: 'redis-restart',
    event: 'Redis restarted (5 probe keys while it is down)',
    store: 'redis',
    async run(ctx) {
      const redis = ctx.stack.redis!;
      await ctx.probe.pause();
      await redis.stopRedis();
      await ctx.probe.burst(5);
      await redis.restart();
      ctx.probe.resume();
      await sleep(1000);
    },
  },
  {
    id: 'redis-pause',
    event: 'Redis paused 300 ms (CLIENT PAUSE)',
    store: 'redis',
    async run(ctx) {
      await rawCommand(ctx.stack.redis!.port, ['CLIENT', 'PAUSE', '300', 'ALL']);
      await sleep(ctx.quick ? 700 : 2000);
    },
  },
  ...MEMCACHED_ROWS,
  {
    id: 'sentinel',
    event: 'Sentinel failover (SENTINEL FAILOVER)',
    store: 'sentinel',
    async run(ctx) {
      const s = ctx.stack.sentinel!;
      await rawCommand(s.master.port, ['WAIT', '1', '2000'], 3000);
      const sentinelPort = s.sentinel.sentinels[0]!.port;
      const t0 = Date.now();
      const reply = await rawCommand(sentinelPort, ['SENTINEL', 'FAILOVER', s.sentinel.masterName]);
      if (!reply.startsWith('+OK')) throw new Error(`SENTINEL FAILOVER: ${reply.trim()}`);
      await eventually(
        async () => (await rawCommand(sentinelPort, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', s.sentinel.masterName])).includes(String(s.replica.port)),
        { timeoutMs: 20_000, intervalMs: 20, what: 'the sentinel to promote the replica' },
      );
      ctx.note(`replica promoted after ${Date.now() - t0} ms`);
      await sleep(ctx.quick ? 1000 : 3000);
    },
  },
  {
    id: 'reload-broken',
    event: 'rules reload with a broken file',
    store: 'memory',
    async run(ctx) {
      for (const r of ctx.stack.replicas) r.writeRules(RULES_FILE, 'domain: audit\ndescriptors:\n  - key: generic_key\n    value: [limited\n');
      await sleep(1500);
    },
  },
  {
    id: 'reload-5mb',
    event: 'reload of a 5 MB rules file under traffic',
    store: 'memory',
    async run(ctx) {
      const text = auditRules(60_000);
      ctx.note(`${(text.length / 1e6).toFixed(1)} MB`);
      for (const r of ctx.stack.replicas) r.writeRules(RULES_FILE, text);
      await sleep(ctx.quick ? 2000 : 4000);
    },
  },
  {
    id: 'idle',
    event: '1,000 idle downstream connections',
    store: 'memory',
    async run(ctx) {
      const idle = await idleConnections(ctx.stack.port, 1000);
      ctx.note(`${idle.opened} connections open`);
      await sleep(ctx.quick ? 500 : 3000);
      idle.close();
    },
  },
  {
    id: 'concurrent',
    event: '500 concurrent downstream requests (on the limited route)',
    store: 'memory',
    async run(ctx) {
      await ctx.probe.pause();
      await concurrentProbes(ctx.probe, ctx.stack.port, 500);
      ctx.probe.resume();
    },
  },
];

/** Envoy's counters of its calls to the rate-limit cluster that say why a call failed (or that Envoy cancelled it). */
const CLUSTER_STATS = [
  'upstream_rq_timeout',
  'upstream_rq_rx_reset',
  'upstream_rq_tx_reset',
  'upstream_cx_connect_fail',
  'upstream_cx_destroy_remote_with_active_rq',
  'upstream_rq_pending_failure_eject',
  'upstream_cx_protocol_error',
  'upstream_rq_pending_overflow',
];

/** What this service's own metrics say about the row: guard actions and answers by FAILURE_MODE (replicas still up). */
async function serviceNotes(stack: AuditStack): Promise<string[]> {
  const out: string[] = [];
  for (const r of stack.replicas) {
    const address = r.httpAddress();
    if (address === undefined) continue;
    const samples = await scrapeMetrics(address).catch(() => undefined);
    if (samples === undefined) continue;
    const parts: string[] = [];
    for (const [key, value] of samples) {
      const action = /^ratelimit_grpc_guard_total\{.*action="([^"]+)"/.exec(key)?.[1];
      if (action !== undefined && value > 0) parts.push(`guard ${action} ${value}`);
    }
    for (const [key, value] of samples) if (value > 0 && /^ratelimit_grpc_(errors|late_answers)_total\{/.test(key)) parts.push(`${key} ${value}`);
    const fallbacks = total(samples, 'ratelimit_store_fallbacks_total');
    if (fallbacks > 0) parts.push(`FAILURE_MODE answers ${fallbacks}`);
    if (parts.length > 0) out.push(`replica :${r.port}: ${parts.join(', ')}`);
  }
  return out;
}

/** One row for one side on a fresh stack. */
export async function runRow(row: AuditRow, side: Side, quick: boolean): Promise<RowResult> {
  const stack = await startAuditStack({
    side,
    store: row.store,
    ...(row.replicas ? { replicas: row.replicas } : {}),
    ...(row.env ? { env: row.env(quick) } : {}),
    ...(row.sharedEnv ? { sharedEnv: row.sharedEnv } : {}),
  });
  const notes: string[] = [];
  try {
    const probe = new Prober(stack.port, 20, `${row.id}-${side}-${Date.now()}`);
    const before = await stack.counts();
    const clusterBefore = await stack.envoy.stats('^cluster\\.ratelimit\\.upstream_');
    await probe.burst(2);
    const first = probe.statuses();
    if (first.join() !== [200, 429, 200, 429].join()) notes.push(`the limit did not hold before the event (statuses ${first.join(' ')})`);
    probe.start();
    try {
      await row.run({ stack, probe, quick, note: (t) => notes.push(t) });
    } finally {
      await probe.stop();
    }
    await probe.burst(row.after ?? 5);
    const after = await stack.counts();
    if (side === 'ours') notes.push(...(await serviceNotes(stack)));
    const clusterAfter = await stack.envoy.stats('^cluster\\.ratelimit\\.upstream_');
    const changed = CLUSTER_STATS.map(
      (n) => [n, (clusterAfter.get(`cluster.ratelimit.${n}`) ?? 0) - (clusterBefore.get(`cluster.ratelimit.${n}`) ?? 0)] as const,
    ).filter(([, d]) => d > 0);
    if (changed.length > 0) notes.push(`Envoy: ${changed.map(([n, d]) => `${n} ${d}`).join(', ')}`);
    const noDecision = after.failureModeAllowed - before.failureModeAllowed;
    const errors = after.error - before.error;
    if (errors !== noDecision) notes.push(`ratelimit.error ${errors}, failure_mode_allowed ${noDecision}`);
    const odd = probe.statuses().filter((s) => s !== 200 && s !== 429);
    if (odd.length > 0) notes.push(`${odd.length} probes answered neither 200 nor 429 (${[...new Set(odd)].join(', ')})`);
    return { noDecision, errors, overLimit: probe.overLimit(), probes: probe.statuses().length, notes };
  } finally {
    await stack.close();
  }
}

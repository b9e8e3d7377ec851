/**
 * Envoy-shaped RateLimitService traffic for the traffic test and the soak script: the descriptor mixes that
 * envoy.yaml's route actions produce ((remote_address=ip), (generic_key=api, user=x), (plan=free|pro)), 1–5
 * descriptors a request, random values including hostile ones (long, non-ASCII, separators), per-call gRPC
 * deadlines of 20–50 ms, hits_addend sometimes. Sent as raw protobuf (raw-rls.ts) by several grpc-js
 * clients on their own connections, open-loop at a set rate (as Envoy sends: whatever the answers).
 */
import * as grpc from '@grpc/grpc-js';
import { RLS_PATH, encodeRequest, fields, type RawDescriptor } from './raw-rls.js';
import type { Prng } from './prng.js';

const IPS = Array.from({ length: 200 }, (_, i) => `10.${i % 7}.${i % 13}.${i}`);
const HOSTILE = ['', '*', '_', 'a_b', 'a:b', 'a|b', '{user}', 'x\u0000y', 'é✓😀', '\u202e', 'ünïcödé', '%00', '../..', ' ', 'svc-*'];

/** A value a client controls (header or address): mostly ordinary, sometimes hostile. */
function value(r: Prng, ordinary: () => string): string {
  const roll = r.next();
  if (roll < 0.85) return ordinary();
  if (roll < 0.95) return r.pick(HOSTILE) + r.int(0, 99);
  return 'L'.repeat(r.int(100, 900)) + r.pick(HOSTILE); // long, still a plausible header value
}

/** One request as Envoy's filter builds it for domain `edge` (config/example.yaml) on a random route. */
export function envoyRequest(r: Prng): { domain: string; descriptors: RawDescriptor[]; hitsAddend: number } {
  const ip = r.chance(0.02)
    ? '10.0.0.10'
    : r.chance(0.05)
      ? `192.168.${r.int(0, 3)}.${r.int(1, 254)}`
      : r.chance(0.05)
        ? `2001:db8::${r.int(0, 0xffff).toString(16)}`
        : r.pick(IPS);
  const descriptors: RawDescriptor[] = [{ entries: [['remote_address', value(r, () => ip)]] }];
  const api = r.chance(0.7);
  if (api) {
    if (r.chance(0.9))
      descriptors.push({
        entries: [
          ['generic_key', 'api'],
          ['user', value(r, () => (r.chance(0.1) ? `svc-${r.int(0, 9)}` : `u${r.int(0, 499)}`))],
        ],
      });
    if (r.chance(0.8)) descriptors.push({ entries: [['plan', value(r, () => r.pick(['free', 'pro']))]] });
  }
  // Further rate_limits entries of other routes/virtual hosts (at most 5 in all), unmatched or partly matched.
  const extra = r.int(0, 5 - descriptors.length);
  for (let i = 0; i < extra; i++) {
    descriptors.push(
      r.pick<() => RawDescriptor>([
        () => ({
          entries: [
            ['remote_address', ip],
            ['path', value(r, () => `/api/v${r.int(1, 3)}`)],
          ],
        }),
        () => ({
          entries: [
            ['generic_key', 'api'],
            ['user', `u${r.int(0, 499)}`],
            ['method', r.pick(['GET', 'POST'])],
          ],
        }),
        () => ({ entries: [['destination_cluster', value(r, () => r.pick(['api', 'web', 'static']))]] }),
        () => ({ entries: [['plan', 'free']], hitsAddend: r.int(0, 3) }),
      ])(),
    );
  }
  return { domain: 'edge', descriptors, hitsAddend: r.chance(0.1) ? r.int(1, 5) : 0 };
}

export interface CallOutcome {
  /** gRPC status name (OK, DEADLINE_EXCEEDED, ...). */
  readonly status: string;
  /** overall_code of an OK answer (1 OK, 2 OVER_LIMIT, 0 UNKNOWN); undefined otherwise. */
  readonly overallCode?: number;
  /** What an OK Check answer said (allowed, denied 429, ...); undefined for ShouldRateLimit. */
  readonly verdict?: string;
  /** Field 2 of the answer (statuses), each decoded to [code, limit_remaining]; OK answers only. */
  readonly statuses?: [number, number][];
  readonly ms: number;
  /** The call's deadline, ms after it was sent. */
  readonly deadlineMs: number;
  readonly message?: string;
  /** The rejection body (RLS raw_body, Check denied body) and the content-type header sent with it, if any. */
  readonly body?: string;
  readonly contentType?: string;
}

/** A call's outcome before decoding: the reply's bytes when the status is OK. */
export interface RawOutcome {
  readonly status: string;
  readonly body?: Buffer;
  readonly ms: number;
  readonly deadlineMs: number;
  readonly message?: string;
}

const text = (b: unknown) => (b instanceof Uint8Array ? Buffer.from(b).toString('utf8') : '');

/** A pool of raw clients, each on its own HTTP/2 connection. */
export class RawClientPool {
  private readonly clients: grpc.Client[];
  private next = 0;
  constructor(address: string, connections: number) {
    this.clients = Array.from(
      { length: connections },
      () => new grpc.Client(address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }),
    );
  }

  /** Sends encoded bytes to `path`; never rejects: every outcome, errors included, is returned with the reply's bytes. */
  call(path: string, bytes: Uint8Array, deadlineMs: number): Promise<RawOutcome> {
    const client = this.clients[this.next++ % this.clients.length]!;
    const t0 = performance.now();
    return new Promise((resolve) => {
      client.makeUnaryRequest<Uint8Array, Buffer>(
        path,
        (b) => Buffer.from(b),
        (b) => b,
        bytes,
        new grpc.Metadata(),
        { deadline: Date.now() + deadlineMs },
        (e, body) => {
          const ms = performance.now() - t0;
          if (e) resolve({ status: grpc.status[e.code] ?? String(e.code), ms, deadlineMs, message: e.details });
          else resolve({ status: 'OK', body: body!, ms, deadlineMs });
        },
      );
    });
  }

  /** A ShouldRateLimit call with encoded bytes; never rejects: every outcome, errors included, is returned. */
  async send(bytes: Uint8Array, deadlineMs: number): Promise<CallOutcome> {
    const o = await this.call(RLS_PATH, bytes, deadlineMs);
    if (o.body === undefined) return { status: o.status, ms: o.ms, deadlineMs, ...(o.message === undefined ? {} : { message: o.message }) };
    try {
      const f = fields(o.body);
      const statuses = (f.get(2) ?? []).map((s) => {
        const d = fields(s as Uint8Array);
        return [(d.get(1)?.[0] as number | undefined) ?? 0, (d.get(3)?.[0] as number | undefined) ?? 0] as [number, number];
      });
      const contentType = (f.get(3) ?? []).map((h) => fields(h as Uint8Array)).find((h) => text(h.get(1)?.[0]) === 'content-type');
      const rawBody = f.get(5)?.[0] as Uint8Array | undefined;
      return {
        status: 'OK',
        overallCode: (f.get(1)?.[0] as number | undefined) ?? 0,
        statuses,
        ms: o.ms,
        deadlineMs,
        ...(rawBody ? { body: Buffer.from(rawBody).toString('utf8') } : {}),
        ...(contentType ? { contentType: text(contentType.get(2)?.[0]) } : {}),
      };
    } catch (error) {
      return { status: 'UNDECODABLE_ANSWER', ms: o.ms, deadlineMs, message: String(error) };
    }
  }

  close(): void {
    for (const c of this.clients) c.close();
  }
}

export interface TrafficStats {
  calls: number;
  byStatus: Record<string, number>;
  byOverall: Record<string, number>;
  /** Calls with an unexpected outcome (INTERNAL, UNKNOWN, overall_code UNKNOWN, undecodable), first few kept. */
  bad: string[];
  maxMs: number;
  /** Calls not sent because maxInFlight calls were pending (the client, not the service, was saturated). */
  skipped: number;
  /**
   * DEADLINE_EXCEEDED seen more than 10 ms after the deadline: the client's own event loop was behind, so its
   * deadline timer may have run before an answer already waiting in the socket (timers run before I/O).
   */
  deadlineExceededClientLagging: number;
  /** Rejection bodies sent with a JSON content type (each must parse). */
  jsonBodies: number;
}

export function emptyStats(): TrafficStats {
  return { calls: 0, byStatus: {}, byOverall: {}, bad: [], maxMs: 0, skipped: 0, deadlineExceededClientLagging: 0, jsonBodies: 0 };
}

const OVERALL = ['UNKNOWN', 'OK', 'OVER_LIMIT'];
const BAD_STATUS = new Set(['INTERNAL', 'UNKNOWN', 'UNDECODABLE_ANSWER', 'UNEXPECTED_ANSWER', 'UNIMPLEMENTED', 'DATA_LOSS']);

/** A rejection body sent as JSON must parse (on_limit bodies substitute client-controlled descriptor values). */
function badBody(stats: TrafficStats, o: CallOutcome): string | undefined {
  if (o.body === undefined || !(o.contentType ?? '').includes('json')) return undefined;
  stats.jsonBodies++;
  try {
    JSON.parse(o.body);
    return undefined;
  } catch (error) {
    return `JSON body does not parse (${String(error)}): ${o.body}`;
  }
}

export function record(stats: TrafficStats, o: CallOutcome): void {
  stats.calls++;
  stats.byStatus[o.status] = (stats.byStatus[o.status] ?? 0) + 1;
  const verdict = o.verdict ?? (o.overallCode === undefined ? undefined : (OVERALL[o.overallCode] ?? `code ${o.overallCode}`));
  if (verdict !== undefined) stats.byOverall[verdict] = (stats.byOverall[verdict] ?? 0) + 1;
  stats.maxMs = Math.max(stats.maxMs, o.ms);
  if (o.status === 'DEADLINE_EXCEEDED' && o.ms > o.deadlineMs + 10) stats.deadlineExceededClientLagging++;
  const bad = BAD_STATUS.has(o.status) || (o.status === 'OK' && o.verdict === undefined && o.overallCode !== 1 && o.overallCode !== 2);
  const why = bad ? `${o.status}${verdict !== undefined ? ` ${verdict}` : ''}: ${o.message ?? ''}` : badBody(stats, o);
  if (why !== undefined && stats.bad.length < 20) stats.bad.push(why.slice(0, 300));
}

export interface TrafficOptions {
  readonly pool: RawClientPool;
  readonly random: Prng;
  /** Calls per second, sent open-loop as Envoy does (whatever the answers). */
  readonly ratePerSecond: number;
  /** Most calls in flight; a call due while this many are pending is not sent (counted in stats.skipped). */
  readonly maxInFlight?: number;
  /** Stop sending when this returns true. */
  readonly stop: () => boolean;
  readonly stats: TrafficStats;
  /** Deadline range in ms (default 20–50, as an Envoy rate limit filter's timeout). */
  readonly deadlineMs?: readonly [number, number];
  /** Other kinds of calls, each sent instead of an envoyRequest() for its share of the calls, counted in its own stats. */
  readonly mix?: readonly TrafficShare[];
}

export interface TrafficShare {
  /** Fraction of all calls (the shares of a mix add up to at most 1). */
  readonly share: number;
  readonly stats: TrafficStats;
  send(pool: RawClientPool, r: Prng, deadlineMs: number): Promise<CallOutcome>;
}

function sendOne(o: TrafficOptions, deadlineMs: number): [TrafficStats, Promise<CallOutcome>] {
  let roll = o.mix === undefined || o.mix.length === 0 ? 1 : o.random.next();
  for (const m of o.mix ?? []) {
    if (roll < m.share) return [m.stats, m.send(o.pool, o.random, deadlineMs)];
    roll -= m.share;
  }
  const req = envoyRequest(o.random);
  return [o.stats, o.pool.send(encodeRequest(req.domain, req.descriptors, req.hitsAddend), deadlineMs)];
}

/** Sends at `ratePerSecond` until `stop()`, in 5 ms ticks; resolves when every call has ended. */
export async function runTraffic(o: TrafficOptions): Promise<void> {
  const [lo, hi] = o.deadlineMs ?? [20, 50];
  const maxInFlight = o.maxInFlight ?? 256;
  const pending = new Set<Promise<void>>();
  const start = performance.now();
  let due = 0;
  while (!o.stop()) {
    const target = Math.floor(((performance.now() - start) * o.ratePerSecond) / 1000);
    for (; due < target; due++) {
      if (pending.size >= maxInFlight) {
        o.stats.skipped++;
        continue;
      }
      const [stats, sent] = sendOne(o, o.random.int(lo, hi));
      const p: Promise<void> = sent.then((outcome) => {
        record(stats, outcome);
        pending.delete(p);
      });
      pending.add(p);
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await Promise.all(pending);
}

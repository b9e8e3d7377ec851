/**
 * on_limit `delay` when the call ends before its slot comes, over gRPC on the memory store
 * and on Redis: the deadline passing or the client's
 * RST_STREAM stops the wait at once (no timer left) and gives the reserved hits back, so the next client
 * takes that slot instead of waiting behind a request no one will answer. ShouldRateLimit, ext_authz Check and
 * POST /json.
 *
 * The server decides on a FakeClock the test moves (waits end only when the test advances it), so a delayed
 * request waits until its call ends from outside: the deadline in real time, or the reset the test sends.
 */
import * as http2 from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { authzType, envoyCheckRequest } from '../support/authz-client.js';
import { eventually } from '../support/eventually.js';
import { grpcFrame } from '../support/raw-h2.js';
import { decodeResponse, encodeRequest, RLS_PATH } from '../support/raw-rls.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { startTestService, type TestService } from '../support/service.js';

const CHECK_PATH = '/envoy.service.auth.v3.Authorization/Check';

// One token every SLOT ms, burst 1: after one request the next waits one slot, the one after two. Redis keeps a
// bucket's state for as long as its debt lasts in REAL time (PX), so a slot is long enough for a loaded
// machine to ask again before the state a refund left expires.
const SLOT = 2000;
const RULES = `domain: cancel
authz:
  rate_limits:
    - actions: [{request_headers: {header_name: x-client, descriptor_key: client}}]
descriptors:
  - key: client
    rate_limit:
      unit: minute
      requests_per_unit: 30
      algorithm: token_bucket
      burst: 1
      on_limit: {action: delay, max_delay: 5s}
`;

interface Ended {
  /** grpc-status the server ended the call with; undefined when the stream was reset. */
  readonly grpcStatus: number | undefined;
  readonly body: Buffer;
}

/** One raw HTTP/2 gRPC call the test can reset while it is pending. */
function openCall(
  session: http2.ClientHttp2Session,
  path: string,
  message: Uint8Array,
  grpcTimeout?: string,
): { stream: http2.ClientHttp2Stream; ended: Promise<Ended> } {
  const stream = session.request({
    ':method': 'POST',
    ':path': path,
    'content-type': 'application/grpc',
    te: 'trailers',
    ...(grpcTimeout !== undefined ? { 'grpc-timeout': grpcTimeout } : {}),
  });
  const ended = new Promise<Ended>((resolve) => {
    let status: number | undefined;
    const chunks: Buffer[] = [];
    const take = (h: http2.IncomingHttpHeaders) => {
      if (h['grpc-status'] !== undefined) status = Number(h['grpc-status']);
    };
    stream.on('response', take);
    stream.on('trailers', take);
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('error', () => undefined);
    stream.on('close', () => resolve({ grpcStatus: status, body: Buffer.concat(chunks).subarray(5) }));
  });
  stream.end(grpcFrame(message));
  return { stream, ended };
}

const rls = (value: string) => encodeRequest('cancel', [{ entries: [['client', value]] }]);
const check = (value: string) => {
  const type = authzType('CheckRequest');
  return type.encode(type.fromObject(envoyCheckRequest({ headers: { 'x-client': value }, contextExtensions: { ratelimit_domain: 'cancel' } }))).finish();
};
const OK = 0;
const DEADLINE_EXCEEDED = 4;

let redisServer: RedisServer;
beforeAll(async () => {
  redisServer = await startRedis();
});
afterAll(async () => {
  await redisServer.stop();
});

describe.each(['memory', 'redis'] as const)('a delayed request whose call ends gives its slot back (%s store)', (backend) => {
  let t: TestService;
  let session: http2.ClientHttp2Session;
  let redis: Redis | undefined;
  const prefix = `cancel-${Date.now()}:`;
  beforeAll(async () => {
    t = await startTestService(
      { 'cancel.yaml': RULES },
      { jsonApi: 'on', ...(backend === 'redis' ? { backend: 'redis', redisUrl: redisServer.url, cacheKeyPrefix: prefix } : {}) },
    );
    session = http2.connect(`http://${t.grpcAddress}`);
    session.on('error', () => undefined);
    if (backend === 'redis') redis = new Redis(redisServer.url);
  });
  afterAll(async () => {
    session.close();
    redis?.disconnect();
    await t.close();
  });

  /** The bucket's stored TAT (ms past t0), Redis only: the state a refund moves back. */
  const storedTat = async (value: string, t0: number): Promise<number | undefined> => {
    if (redis === undefined) return undefined;
    const keys = (await redis.keys(`${prefix}*`)).filter((k) => k.includes(value));
    expect(keys).toHaveLength(1);
    const raw = await redis.get(keys[0]!);
    return Number(raw!.split(':')[0]) - t0;
  };

  /**
   * X takes the token; A is delayed one slot and its call ends (`end`); then B must get A's slot: waiting
   * one slot, not two, with no timer left behind by A.
   */
  async function scenario(
    path: string,
    message: (v: string) => Uint8Array,
    value: string,
    aTimeout: string,
    end: (a: ReturnType<typeof openCall>) => Promise<void>,
  ): Promise<void> {
    const t0 = t.clock.nowMs();
    const x = await openCall(session, path, message(value), '10S').ended;
    expect(x.grpcStatus).toBe(OK);
    const a = openCall(session, path, message(value), aTimeout);
    await eventually(() => t.timer.pending === 1, { what: 'A waiting for its slot' });
    expect(t.timer.nextAt()).toBe(t0 + SLOT);
    if (backend === 'redis') expect(await storedTat(value, t0)).toBe(2 * SLOT);
    await end(a);
    // The wait stopped (no timer left) and the slot went back to the bucket.
    await eventually(() => t.timer.pending === 0, { what: "A's wait stopped" });
    if (backend === 'redis') await eventually(async () => (await storedTat(value, t0)) === SLOT, { what: "A's hit given back in Redis" });
    const b = openCall(session, path, message(value), '10S');
    await eventually(() => t.timer.pending === 1, { what: 'B waiting' });
    expect(t.timer.nextAt(), "B waits for A's slot: one slot, not two").toBe(t0 + SLOT);
    t.timer.advance(SLOT);
    const answered = await b.ended;
    expect(answered.grpcStatus).toBe(OK);
    if (path === RLS_PATH) expect(decodeResponse(answered.body).overallCode).toBe(1);
  }

  it('ShouldRateLimit, the client resets the stream (RST_STREAM CANCEL)', async () => {
    await scenario(RLS_PATH, rls, 'rst', '10S', async (a) => {
      a.stream.close(http2.constants.NGHTTP2_CANCEL);
      expect((await a.ended).grpcStatus).toBeUndefined();
    });
  });

  it('ShouldRateLimit, the deadline passes while it waits (the server ends the call)', async () => {
    // A's deadline (2.5 s of real time, more than its delay) passes before its slot (the FakeClock stands still).
    await scenario(RLS_PATH, rls, 'deadline', '2500m', async (a) => {
      expect((await a.ended).grpcStatus).toBe(DEADLINE_EXCEEDED);
    });
  });

  it('ext_authz Check, the client resets the stream', async () => {
    await scenario(CHECK_PATH, check, 'authz', '10S', async (a) => {
      a.stream.close(http2.constants.NGHTTP2_CANCEL);
      await a.ended;
    });
  });

  it('POST /json (JSON_API=on), the HTTP client goes away', async () => {
    const t0 = t.clock.nowMs();
    expect((await openCall(session, RLS_PATH, rls('json'), '10S').ended).grpcStatus).toBe(OK);
    const gone = new AbortController();
    const body = JSON.stringify({ domain: 'cancel', descriptors: [{ entries: [{ key: 'client', value: 'json' }] }] });
    const a = fetch(`${t.httpBase}/json`, { method: 'POST', body, signal: gone.signal }).catch((err: unknown) => err);
    await eventually(() => t.timer.pending === 1, { what: 'A waiting for its slot' });
    gone.abort();
    await a;
    await eventually(() => t.timer.pending === 0, { what: "A's wait stopped" });
    const b = openCall(session, RLS_PATH, rls('json'), '10S');
    await eventually(() => t.timer.pending === 1, { what: 'B waiting' });
    expect(t.timer.nextAt()).toBe(t0 + SLOT);
    t.timer.advance(SLOT);
    expect((await b.ended).grpcStatus).toBe(OK);
  });

  it('counts the released reservations in /metrics, and no late answer or gRPC error for the ended calls', async () => {
    const text = await (await fetch(`${t.httpBase}/metrics`)).text();
    expect(text).toMatch(/ratelimit_on_limit_delay_released_total\{domain="cancel",result="released"\} 4\n/);
    // No wait left behind: the engine's live timers, as /metrics exports them.
    expect(text).toMatch(/\nratelimit_on_limit_waiting 0\n/);
    expect(text).not.toMatch(/ratelimit_grpc_late_answers_total\{[^}]*\} [1-9]/);
    expect(text).not.toMatch(/ratelimit_grpc_errors_total\{code="(CANCELLED|INTERNAL|UNKNOWN)"\} [1-9]/);
  });
});

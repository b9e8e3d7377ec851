/**
 * The lean server's shutdown (close(graceMs), what SIGTERM ends in after SHUTDOWN_DRAIN_MS) answers the streams a
 * client sent before it read the first GOAWAY, over plain TCP and over TLS. A frame-level client plays Envoy under
 * load: as the GOAWAY (last stream 2^31−1) arrives it still sends a call, as one already on the wire would be, and
 * only then answers the PING. That call must be answered, its trailers sent, and named by the second GOAWAY; a
 * one-step GOAWAY would have named only the calls received so far, and the late call would go undecided.
 */
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { drainSession } from '../../src/server/grpc/lean/drain-session.js';
import { noticeWriter } from '../../src/server/grpc/lean/goaway-notice.js';
import { FRAME, goawayLastStream, type Frame } from '../support/h2-frames.js';
import { ECHO, leanEchoContext } from '../support/lean-echo.js';
import { grpcFrame } from '../support/raw-h2.js';

const GRACE_MS = 10_000;
const LAST = 2 ** 31 - 1;
const ctx = leanEchoContext();
/** Over TLS the notice goes through the passage that connection aging sets up: aging on, far off. */
const AGING = { ageMs: 3_600_000, graceMs: 0 };

const isData = (stream: number) => (f: Frame) => f.type === FRAME.DATA && f.stream === stream && f.payload.length > 0;
const isTrailers = (stream: number) => (f: Frame) => f.type === FRAME.HEADERS && f.stream === stream && (f.flags & 1) === 1;

describe.each([
  ['plain TCP', false],
  ['TLS', true],
])('shutdown over %s', (_name, secure) => {
  it('answers the call a client sent before it read the first GOAWAY, names it in the second, then closes', async () => {
    const s = await ctx.serve(secure, secure ? AGING : undefined);
    const c = await ctx.connect(s.port, secure);
    const first = c.call(ECHO, grpcFrame(Buffer.from('before')));
    expect((await c.next(isData(first))).payload.subarray(5).toString()).toBe('before');

    const started = performance.now();
    const closed = s.close(GRACE_MS);
    const notice = await c.next((f) => f.type === FRAME.GOAWAY);
    expect(goawayLastStream(notice)).toBe(LAST);
    const late = c.call(ECHO, grpcFrame(Buffer.from('on the wire')));
    c.ackPing(await c.next((f) => f.type === FRAME.PING && (f.flags & 1) === 0));

    expect((await c.next(isData(late))).payload.subarray(5).toString()).toBe('on the wire');
    await c.next(isTrailers(late));
    const last = await c.next((f) => f.type === FRAME.GOAWAY && goawayLastStream(f) < LAST);
    expect(goawayLastStream(last)).toBe(late);
    expect(c.frames.filter((f) => f.type === FRAME.RST_STREAM)).toEqual([]);

    // its calls answered, the connection closes long before the grace; new connections are refused
    await closed;
    expect(performance.now() - started).toBeLessThan(GRACE_MS / 2);
    await expect(ctx.connect(s.port, secure)).rejects.toThrow(/ECONNREFUSED/);
  });
});

it('cuts a connection whose peer never answers the PING when the grace is over', async () => {
  const s = await ctx.serve(false);
  const c = await ctx.connect(s.port, false);
  const first = c.call(ECHO, grpcFrame(Buffer.from('before')));
  await c.next(isData(first));
  const closed = s.close(300);
  expect(goawayLastStream(await c.next((f) => f.type === FRAME.GOAWAY))).toBe(LAST);
  await closed;
  await expect(c.next(() => false, 5000)).rejects.toThrow(/closed first/);
});

it('over TLS without connection aging (no passage for the notice), drains in one step: the GOAWAY names the last call received', async () => {
  const s = await ctx.serve(true);
  const c = await ctx.connect(s.port, true);
  const first = c.call(ECHO, grpcFrame(Buffer.from('before')));
  await c.next(isData(first));
  const closed = s.close(GRACE_MS);
  expect(goawayLastStream(await c.next((f) => f.type === FRAME.GOAWAY))).toBe(first);
  await closed;
});

it("writes the first GOAWAY after the server's SETTINGS on a connection just accepted", async () => {
  const server = http2.createServer();
  const notice = noticeWriter(server);
  server.on('session', (session) => process.nextTick(() => drainSession(session, notice, 5000)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const c = await ctx.connect((server.address() as AddressInfo).port, false);
    const goaway = await c.next((f) => f.type === FRAME.GOAWAY);
    expect(goawayLastStream(goaway)).toBe(LAST);
    expect(c.frames[0]?.type).toBe(FRAME.SETTINGS);
  } finally {
    server.close();
  }
});

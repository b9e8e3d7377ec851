/**
 * The streams a client sent before it read the first GOAWAY of an aging connection are answered, over plain TCP
 * and over TLS. A frame-level client plays Envoy under load: as the GOAWAY (last stream 2^31−1) arrives it still
 * sends a call, as one already on the wire would be, and only then answers the PING. That call must be answered
 * and named by the second GOAWAY; node:http2's own GOAWAY would have had it ignored, and the PING ack never read.
 * The same holds when the connection guard closes an idle connection.
 */
import { readFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ConnectionGuard } from '../../src/server/grpc/guard/connection-guard.js';
import { noticeWriter } from '../../src/server/grpc/lean/goaway-notice.js';
import { FRAME, goawayLastStream, type Frame } from '../support/h2-frames.js';
import { ECHO, leanEchoContext } from '../support/lean-echo.js';
import { grpcFrame } from '../support/raw-h2.js';

const ctx = leanEchoContext();

const isData = (stream: number) => (f: Frame) => f.type === FRAME.DATA && f.stream === stream && f.payload.length > 0;

describe.each([
  ['plain TCP', 'tcp'],
  ['TLS', 'tls'],
  ['a Unix socket', 'unix'],
] as const)('an aging connection over %s', (_name, transport) => {
  it('answers the call a client sent before it read the first GOAWAY, and names it in the second', async () => {
    const secure = transport === 'tls';
    const socketPath = join(tmpdir(), `rl-age-${process.pid}-${Date.now()}.sock`);
    const s = await ctx.serve(secure, { ageMs: 300, graceMs: 5000, random: () => 0.5 }, transport === 'unix' ? `unix:${socketPath}` : undefined);
    const client = await ctx.connect(transport === 'unix' ? socketPath : s.port, secure);
    const first = client.call(ECHO, grpcFrame(Buffer.from('before')));
    expect((await client.next(isData(first))).payload.subarray(5).toString()).toBe('before');

    const notice = await client.next((f) => f.type === FRAME.GOAWAY);
    expect(goawayLastStream(notice)).toBe(2 ** 31 - 1);
    const late = client.call(ECHO, grpcFrame(Buffer.from('on the wire')));
    client.ackPing(await client.next((f) => f.type === FRAME.PING && (f.flags & 1) === 0));

    expect((await client.next(isData(late))).payload.subarray(5).toString()).toBe('on the wire');
    const last = await client.next((f) => f.type === FRAME.GOAWAY && goawayLastStream(f) < 2 ** 31 - 1);
    expect(goawayLastStream(last)).toBe(late);
    expect(client.frames.filter((f) => f.type === FRAME.RST_STREAM)).toEqual([]);
  });
});

it("gives a TLS session's later listeners the peer's address through the passage", async () => {
  const pki = ctx.pki;
  const tlsServer = http2.createSecureServer({ key: readFileSync(pki.serverKey), cert: readFileSync(pki.serverCert), ALPNProtocols: ['h2'] });
  const peers: unknown[] = [];
  tlsServer.on('session', (session) => peers.push(session.socket.remoteAddress));
  expect(typeof noticeWriter(tlsServer)).toBe('function');
  tlsServer.on('stream', (stream) => stream.respond({ ':status': 200 }, { endStream: true }));
  await new Promise<void>((resolve) => tlsServer.listen(0, '127.0.0.1', resolve));
  const port = (tlsServer.address() as AddressInfo).port;
  const session = http2.connect(`https://127.0.0.1:${port}`, { ca: readFileSync(pki.caCert), servername: pki.serverName });
  const answered = await new Promise<number>((resolve) => session.request({ ':path': '/' }).on('response', (h) => resolve(Number(h[':status']))));
  session.close();
  await new Promise<void>((resolve) => tlsServer.close(() => resolve()));
  expect(answered).toBe(200);
  expect(peers).toEqual(['127.0.0.1']);
});

describe.each([
  ['plain TCP', false],
  ['TLS with aging on', true],
])('an idle connection closed over %s', (_name, secure) => {
  it('takes the call a client sends as the connection goes idle-closed: two GOAWAYs, the call answered', async () => {
    const guard = new ConnectionGuard({ maxConnections: 10, messageTimeoutMs: 5000, idleTimeoutMs: 200, resetBurst: 100, resetRatePerS: 10 });
    const s = await ctx.serve(secure, secure ? { ageMs: 3_600_000, graceMs: 0 } : undefined, undefined, guard);
    const client = await ctx.connect(s.port, secure);
    const notice = await client.next((f) => f.type === FRAME.GOAWAY);
    expect(goawayLastStream(notice)).toBe(2 ** 31 - 1);
    const late = client.call(ECHO, grpcFrame(Buffer.from('just then')));
    client.ackPing(await client.next((f) => f.type === FRAME.PING && (f.flags & 1) === 0));
    expect((await client.next(isData(late))).payload.subarray(5).toString()).toBe('just then');
    expect(goawayLastStream(await client.next((f) => f.type === FRAME.GOAWAY && goawayLastStream(f) < 2 ** 31 - 1))).toBe(late);
  });
});

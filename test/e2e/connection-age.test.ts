/**
 * Connections age out on the lean transport (GRPC_MAX_CONNECTION_AGE / _GRACE), over real sockets with node:http2
 * clients: GOAWAY at the age (±10%), first naming stream 2^31−1 so that nothing the client already sent is
 * refused; the call in flight is answered; the connection is cut after the grace if a call is still open; the
 * client's next call goes out on a new connection.
 */
import * as http2 from 'node:http2';
import { afterEach, describe, expect, it } from 'vitest';
import { Code } from '../../src/server/grpc/lean/grpc-wire.js';
import { jitteredAgeMs } from '../../src/server/grpc/lean/connection-age.js';
import { startLeanServer, type RunningLeanServer } from '../../src/server/grpc/lean/lean-server.js';
import { routeTable } from '../../src/server/grpc/lean/routes.js';
import { grpcFrame } from '../support/raw-h2.js';

const HANG = '/t.T/Hang';
const ECHO = '/t.T/Echo';
let server: RunningLeanServer | undefined;
let release: (() => void) | undefined;
const sessions: http2.ClientHttp2Session[] = [];

async function start(ageMs: number, graceMs: number, random = () => 0.5): Promise<RunningLeanServer> {
  const routes = routeTable();
  routes.unary.set(ECHO, (bytes) => Promise.resolve(Buffer.from(bytes)));
  routes.unary.set(HANG, () => new Promise((resolve) => (release = () => resolve(Buffer.from('answered')))));
  server = await startLeanServer({
    host: '127.0.0.1',
    port: 0,
    routes,
    hooks: { maxMessageBytes: 1024, toStatus: (err) => ({ code: Code.INTERNAL, details: String(err) }), onFinished: () => undefined },
    maxConnectionAge: { ageMs, graceMs, random },
  });
  return server;
}

function connect(address: string): http2.ClientHttp2Session {
  const s = http2.connect(`http://${address}`);
  s.on('error', () => undefined);
  sessions.push(s);
  return s;
}

/** One unary call: grpc-status and body, or -2 when the stream ended without a status. */
function call(session: http2.ClientHttp2Session, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    let status = -2;
    const chunks: Buffer[] = [];
    const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });
    const take = (h: http2.IncomingHttpHeaders) => void (h['grpc-status'] !== undefined && (status = Number(h['grpc-status'])));
    stream.on('response', take);
    stream.on('trailers', take);
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('error', () => undefined);
    stream.on('close', () => resolve({ status, body: Buffer.concat(chunks).subarray(5).toString() }));
    stream.end(grpcFrame(Buffer.from('hi')));
  });
}

const goaways = (s: http2.ClientHttp2Session) => {
  const seen: { code: number; last: number; atMs: number }[] = [];
  const t0 = performance.now();
  s.on('goaway', (code: number, last: number) => seen.push({ code, last, atMs: performance.now() - t0 }));
  return seen;
};
const closed = (s: http2.ClientHttp2Session) => new Promise<number>((resolve) => s.once('close', () => resolve(performance.now())));

afterEach(async () => {
  release?.();
  release = undefined;
  for (const s of sessions.splice(0)) s.destroy();
  await server?.close(100);
  server = undefined;
});

describe('GRPC_MAX_CONNECTION_AGE on the lean transport', () => {
  it('spreads the age by ±10%, as gRPC spreads MaxConnectionAge', () => {
    expect(jitteredAgeMs(10_000, () => 0)).toBe(9000);
    expect(jitteredAgeMs(10_000, () => 0.5)).toBe(10_000);
    expect(jitteredAgeMs(10_000, () => 0.999_999)).toBe(11_000);
    expect(jitteredAgeMs(86_400_000, () => 0.25)).toBe(82_080_000);
  });

  it('sends GOAWAY at the age without refusing a stream, answers the call in flight, and closes once it is answered', async () => {
    const s = await start(300, 5000, () => 0); // the earliest the jitter allows: 270 ms
    const client = connect(s.address);
    const seen = goaways(client);
    const gone = closed(client);
    expect((await call(client, ECHO)).status).toBe(0);
    const inFlight = call(client, HANG);
    await new Promise<void>((resolve) => client.once('goaway', () => resolve()));
    // the heads-up names the highest stream id: whatever the client had sent is still taken
    expect(seen[0]).toMatchObject({ code: http2.constants.NGHTTP2_NO_ERROR, last: 2 ** 31 - 1 });
    expect(seen[0]!.atMs).toBeGreaterThanOrEqual(250);
    release!();
    expect(await inFlight).toEqual({ status: 0, body: 'answered' });
    await gone;
    // a new connection takes the next call
    expect((await call(connect(s.address), ECHO)).status).toBe(0);
  });

  it('cuts a connection whose call is still open after the grace', async () => {
    const s = await start(200, 400, () => 0.5);
    const client = connect(s.address);
    const t0 = performance.now();
    const gone = closed(client);
    const stuck = call(client, HANG);
    const closedAt = await gone;
    expect(closedAt - t0).toBeGreaterThanOrEqual(550); // age 200 + grace 400, less timer slack
    expect((await stuck).status).toBe(-2);
  });

  it('never ages connections with GRPC_MAX_CONNECTION_AGE=0', async () => {
    const s = await start(0, 0);
    const client = connect(s.address);
    const seen = goaways(client);
    for (let i = 0; i < 5; i++) expect((await call(client, ECHO)).status).toBe(0);
    expect(seen).toEqual([]);
  });
});

/**
 * The lean transport's own wire behaviour, over a real socket with a bare HTTP/2 client: framing refusals,
 * grpc-timeout deadlines, cancellation by RST_STREAM reaching the route's signal, percent-encoded
 * grpc-message, unknown paths, wrong content types, and graceful close. (ShouldRateLimit and health on the
 * lean transport are covered by the e2e suite, which runs on it by default.)
 */
import * as http2 from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code, encodeGrpcMessage, GrpcStatusError, parseGrpcTimeout } from '../../src/server/grpc/lean/grpc-wire.js';
import { startLeanServer, type RunningLeanServer } from '../../src/server/grpc/lean/lean-server.js';
import { routeTable } from '../../src/server/grpc/lean/routes.js';
import { grpcFrame, RawH2Client } from '../support/raw-h2.js';

const events: string[] = [];
let server: RunningLeanServer;
let client: RawH2Client;
let release: (() => void) | undefined;

beforeAll(async () => {
  const routes = routeTable();
  routes.unary.set('/t.T/Echo', (bytes) => Promise.resolve(Buffer.from(bytes)));
  routes.unary.set('/t.T/Fail', () => Promise.reject(new GrpcStatusError(Code.INVALID_ARGUMENT, 'bad 100% ünicode\nline')));
  routes.unary.set('/t.T/Throw', () => Promise.reject(new Error('boom')));
  routes.unary.set('/t.T/Hang', (_bytes, _deadline, call) => {
    const signal = call.signal;
    return new Promise((resolve) => {
      release = () => resolve(Buffer.from('late'));
      signal.addEventListener('abort', () => events.push(`aborted: ${(signal.reason as Error).message}`));
    });
  });
  // Blocks the event loop past the caller's deadline, then answers on a later timer: the deadline timer
  // ends the call first, and the answer handed over afterwards must still count as late.
  routes.unary.set('/t.T/Block', () => {
    const until = performance.now() + 80;
    while (performance.now() < until);
    return new Promise((resolve) => setTimeout(() => resolve(Buffer.from('late')), 0));
  });
  server = await startLeanServer({
    host: '127.0.0.1',
    port: 0,
    routes,
    hooks: {
      maxMessageBytes: 1024,
      toStatus: (err) => ({ code: Code.INTERNAL, details: String((err as Error).message) }),
      onFinished: (m, code) => events.push(`${m} ${code}`),
      onLate: (m) => events.push(`late ${m}`),
    },
  });
  client = new RawH2Client(server.address);
});
afterAll(async () => {
  client.close();
  await server.close(100);
});

describe('lean transport', () => {
  it('parses grpc-timeout and percent-encodes grpc-message', () => {
    expect(parseGrpcTimeout('20m')).toBe(20);
    expect(parseGrpcTimeout('3S')).toBe(3000);
    expect(parseGrpcTimeout('1H')).toBe(3_600_000);
    expect(parseGrpcTimeout('500u')).toBe(0.5);
    expect(parseGrpcTimeout(undefined)).toBeUndefined();
    for (const bad of ['', 'm', '123456789m', '10x', '-1m', '1.5S']) expect(parseGrpcTimeout(bad)).toBeNaN();
    expect(encodeGrpcMessage('plain text')).toBe('plain text');
    expect(encodeGrpcMessage('100% ü\n')).toBe('100%25 %C3%BC%0A');
  });

  it('answers a unary call and ends it with grpc-status 0 in the trailers', async () => {
    const o = await client.call('/t.T/Echo', grpcFrame(Buffer.from('hello')), 1000);
    expect(o).toEqual({ grpcStatus: 0, message: '', body: Buffer.from('hello') });
  });

  it('ends errors with their status and a percent-encoded message', async () => {
    expect(await client.call('/t.T/Fail', grpcFrame(Buffer.alloc(0)), 1000)).toMatchObject({
      grpcStatus: Code.INVALID_ARGUMENT,
      message: 'bad 100% ünicode\nline',
    });
    expect(await client.call('/t.T/Throw', grpcFrame(Buffer.alloc(0)), 1000)).toMatchObject({ grpcStatus: Code.INTERNAL, message: 'boom' });
    expect(await client.call('/t.T/Nope', grpcFrame(Buffer.alloc(0)), 1000)).toMatchObject({
      grpcStatus: Code.UNIMPLEMENTED,
      message: 'The server does not implement the method /t.T/Nope',
    });
  });

  it('refuses compressed, oversized, truncated, doubled and missing messages with a status', async () => {
    const msg = Buffer.from('x');
    expect((await client.call('/t.T/Echo', grpcFrame(msg, 1), 1000)).grpcStatus).toBe(Code.INTERNAL);
    expect(await client.call('/t.T/Echo', grpcFrame(Buffer.alloc(5000)), 1000)).toMatchObject({
      grpcStatus: Code.RESOURCE_EXHAUSTED,
      message: 'Received message larger than max (5000 vs. 1024)',
    });
    expect((await client.call('/t.T/Echo', grpcFrame(msg).subarray(0, 3), 1000)).grpcStatus).toBe(Code.INTERNAL);
    expect((await client.call('/t.T/Echo', Buffer.concat([grpcFrame(msg), grpcFrame(msg)]), 1000)).grpcStatus).toBe(Code.INTERNAL);
    expect((await client.call('/t.T/Echo', Buffer.alloc(0), 1000)).grpcStatus).toBe(Code.INTERNAL);
    // and still answers
    expect((await client.call('/t.T/Echo', grpcFrame(msg), 1000)).grpcStatus).toBe(0);
  });

  it('refuses grpc-encoding other than identity with UNIMPLEMENTED, and a non-gRPC content type with HTTP 415', async () => {
    const session = http2.connect(`http://${server.address}`);
    const ask = (headers: http2.OutgoingHttpHeaders) =>
      new Promise<http2.IncomingHttpHeaders>((resolve) => {
        const s = session.request({ ':method': 'POST', ':path': '/t.T/Echo', ...headers });
        s.on('response', resolve);
        s.on('data', () => undefined);
        s.end(grpcFrame(Buffer.from('x')));
      });
    const gz = await ask({ 'content-type': 'application/grpc', 'grpc-encoding': 'gzip' });
    expect(gz['grpc-status']).toBe(String(Code.UNIMPLEMENTED));
    expect(gz['grpc-accept-encoding']).toBe('identity');
    expect((await ask({ 'content-type': 'application/json' }))[':status']).toBe(415);
    session.close();
  });

  it('answers DEADLINE_EXCEEDED at the grpc-timeout and aborts the route', async () => {
    events.length = 0;
    const t0 = performance.now();
    const o = await client.call('/t.T/Hang', grpcFrame(Buffer.from('x')), 50);
    expect(o.grpcStatus).toBe(Code.DEADLINE_EXCEEDED);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(45);
    expect(events.sort()).toEqual(['Hang 4', 'aborted: Deadline exceeded']);
    release?.(); // a late answer is dropped, not sent twice
  });

  it('counts an answer handed over after the deadline as late, even when the deadline already ended the call', async () => {
    events.length = 0;
    const o = await client.call('/t.T/Block', grpcFrame(Buffer.from('x')), 30);
    expect(o.grpcStatus).toBe(Code.DEADLINE_EXCEEDED);
    for (let i = 0; i < 50 && events.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(events).toEqual(['Block 4', 'late Block']);
  });

  it('aborts the route when the caller resets the stream (RST_STREAM CANCEL)', async () => {
    events.length = 0;
    const session = http2.connect(`http://${server.address}`);
    const s = session.request({ ':method': 'POST', ':path': '/t.T/Hang', 'content-type': 'application/grpc', te: 'trailers' });
    s.on('error', () => undefined);
    s.end(grpcFrame(Buffer.from('x')));
    await new Promise((resolve) => setTimeout(resolve, 50));
    s.close(http2.constants.NGHTTP2_CANCEL);
    for (let i = 0; i < 100 && events.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(events).toEqual(['Hang 1', 'aborted: call cancelled']);
    release?.();
    session.close();
  });

  it('on close, finishes the call in flight and refuses new ones', async () => {
    const routes = routeTable();
    let answer: (() => void) | undefined;
    routes.unary.set('/t.T/Slow', () => new Promise((resolve) => (answer = () => resolve(Buffer.from('done')))));
    const s = await startLeanServer({ host: '127.0.0.1', port: 0, routes, hooks: { maxMessageBytes: 1024, toStatus: () => ({ code: 13, details: 'x' }) } });
    const c = new RawH2Client(s.address);
    const inFlight = c.call('/t.T/Slow', grpcFrame(Buffer.from('x')), 5000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const closed = s.close(5000);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const late = new RawH2Client(s.address); // a new connection after close: refused
    expect((await late.call('/t.T/Slow', grpcFrame(Buffer.from('x')), 500)).grpcStatus).toBeLessThan(0);
    late.close();
    answer!();
    expect(await inFlight).toMatchObject({ grpcStatus: 0, body: Buffer.from('done') });
    await closed;
    c.close();
  });
});

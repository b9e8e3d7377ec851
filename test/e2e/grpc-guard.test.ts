/**
 * What a client can make the gRPC port hold is bounded, with small limits so that the
 * counts stay modest:
 * half-sent requests are reset by GRPC_MESSAGE_TIMEOUT_MS, connections past GRPC_MAX_CONNECTIONS get GOAWAY,
 * idle connections are closed gracefully, Watch calls are capped, and a connection resetting streams in a loop
 * (rapid reset, CVE-2023-44487) is retired on its own after a bounded number of resets (GOAWAY, calls in flight
 * answered) while its reconnects are accepted and another client is answered throughout; refusing the address
 * is only done when asked (GRPC_RESET_REFUSE_ADDRESS: behind Envoy it would refuse Envoy). Before: none of
 * these bounds existed (half-sent streams never ended).
 */
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { grpcFrame, RawH2Client } from '../support/raw-h2.js';
import { encodeRequest, RLS_PATH } from '../support/raw-rls.js';
import { startTestService, type TestService } from '../support/service.js';

const RULES = { 'app.yaml': 'domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: second, requests_per_unit: 1000000}\n' };
const LIMITS = {
  grpcMessageTimeoutMs: 500,
  grpcMaxConnections: 8,
  grpcIdleTimeoutMs: 1500,
  grpcMaxWatchStreams: 5,
  grpcResetBurst: 50,
  grpcResetRatePerS: 10,
};
const { NGHTTP2_CANCEL, NGHTTP2_ENHANCE_YOUR_CALM, NGHTTP2_NO_ERROR } = http2.constants;
const request = grpcFrame(encodeRequest('app', [{ entries: [['user', 'u']] }]));

let t: TestService;
beforeAll(async () => {
  t = await startTestService(RULES, LIMITS);
});
afterAll(async () => {
  await t.close();
});

const guardCount = async (action: string) => {
  const text = await (await fetch(`${t.httpBase}/metrics`)).text();
  return Number(new RegExp(`^ratelimit_grpc_guard_total\\{action="${action}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
};

/** Waits until the server holds no connection from an earlier test (closing is asynchronous). */
const settled = () =>
  eventually(async () => /^ratelimit_grpc_connections 0$/m.test(await (await fetch(`${t.httpBase}/metrics`)).text()), { what: 'no open connection' });

/** The first message of a Watch, or a failure when the stream ends first. */
function firstMessage(stream: http2.ClientHttp2Stream): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.once('data', () => resolve());
    stream.once('close', () => reject(new Error(`Watch closed (rst ${stream.rstCode})`)));
  });
}

/** A connection to the service from `localAddress` (a loopback address: another peer for the server). */
function connect(localAddress = '127.0.0.1'): http2.ClientHttp2Session {
  const [host, port] = t.grpcAddress.split(':') as [string, string];
  const s = http2.connect(`http://${t.grpcAddress}`, { createConnection: () => net.connect({ host, port: Number(port), localAddress }) });
  s.on('error', () => undefined);
  return s;
}

/** Resolves with the GOAWAY code the server sent, or 'closed' when the session ended without one. */
function goawayOf(session: http2.ClientHttp2Session): Promise<number | 'closed'> {
  return new Promise((resolve) => {
    session.once('goaway', (code: number) => resolve(code));
    session.once('close', () => resolve('closed'));
  });
}

/** The grpc-status a stream ends with (headers or trailers), or 'none'. */
function statusOf(stream: http2.ClientHttp2Stream): Promise<string> {
  return new Promise((resolve) => {
    let status = 'none';
    const take = (h: http2.IncomingHttpHeaders) => {
      if (typeof h['grpc-status'] === 'string') status = h['grpc-status'];
    };
    stream.on('response', take);
    stream.on('trailers', take);
    stream.resume();
    stream.on('close', () => resolve(status));
  });
}

function open(session: http2.ClientHttp2Session, path: string): http2.ClientHttp2Stream {
  const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });
  stream.on('error', () => undefined);
  return stream;
}

describe('gRPC port bounds', () => {
  it('resets 300 half-sent requests by the message timeout', async () => {
    const sessions = [connect(), connect(), connect()];
    try {
      const closed: Promise<number | undefined>[] = [];
      for (let i = 0; i < 300; i++) {
        const stream = open(sessions[i % 3]!, RLS_PATH);
        stream.write(request.subarray(0, 7)); // the prefix and 2 bytes; the rest never comes
        closed.push(new Promise((resolve) => stream.on('close', () => resolve(stream.rstCode))));
      }
      const started = Date.now();
      const bounded = await Promise.race([Promise.all(closed), new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 10_000))]);
      expect(bounded).not.toBe('hung');
      expect(Date.now() - started).toBeGreaterThanOrEqual(LIMITS.grpcMessageTimeoutMs - 100);
      expect(new Set(bounded as number[])).toEqual(new Set([NGHTTP2_CANCEL]));
      expect(await guardCount('message_timeout')).toBe(300);
    } finally {
      for (const s of sessions) s.destroy();
    }
  });

  it(`refuses connections past GRPC_MAX_CONNECTIONS (${LIMITS.grpcMaxConnections}) with GOAWAY`, async () => {
    await settled();
    const clients = Array.from({ length: LIMITS.grpcMaxConnections }, () => new RawH2Client(t.grpcAddress));
    try {
      for (const c of clients) expect((await c.call(RLS_PATH, request, 3000)).grpcStatus).toBe(0);
      const extra = connect();
      expect(await goawayOf(extra)).toBe(NGHTTP2_ENHANCE_YOUR_CALM);
      extra.destroy();
      expect(await guardCount('connection_refused')).toBeGreaterThanOrEqual(1);
    } finally {
      for (const c of clients) c.close();
    }
  });

  it('closes an idle connection gracefully, and keeps one with an open Watch', async () => {
    await settled();
    const idle = connect();
    const watching = connect();
    try {
      const watch = open(watching, '/grpc.health.v1.Health/Watch');
      watch.end(grpcFrame(Buffer.alloc(0)));
      await firstMessage(watch);
      const started = Date.now();
      expect(await goawayOf(idle)).toBe(NGHTTP2_NO_ERROR);
      expect(Date.now() - started).toBeGreaterThanOrEqual(LIMITS.grpcIdleTimeoutMs - 200);
      expect(watching.closed || watching.destroyed).toBe(false);
      watch.close(NGHTTP2_CANCEL);
    } finally {
      idle.destroy();
      watching.destroy();
    }
  });

  it(`answers Watch number ${LIMITS.grpcMaxWatchStreams + 1} RESOURCE_EXHAUSTED`, async () => {
    await settled();
    const session = connect();
    try {
      const watches = [];
      for (let i = 0; i < LIMITS.grpcMaxWatchStreams; i++) {
        const w = open(session, '/grpc.health.v1.Health/Watch');
        w.end(grpcFrame(Buffer.alloc(0)));
        await firstMessage(w);
        watches.push(w);
      }
      const other = new RawH2Client(t.grpcAddress);
      const extra = await other.call('/grpc.health.v1.Health/Watch', grpcFrame(Buffer.alloc(0)), 3000);
      other.close();
      expect(extra.grpcStatus).toBe(8);
      for (const w of watches) w.close(NGHTTP2_CANCEL);
    } finally {
      session.destroy();
    }
  });

  /** Resets streams on `session` in a loop until the server sends GOAWAY (or 5,000 resets or 10 s): the count and seconds. */
  async function resetLoop(session: http2.ClientHttp2Session): Promise<{ resets: number; seconds: number; goaway: number | 'closed' }> {
    const cut = goawayOf(session);
    let resets = 0;
    let goaway = false;
    void cut.then(() => (goaway = true));
    const started = Date.now();
    while (!goaway && !session.closed && !session.destroyed && resets < 5000 && Date.now() - started < 10_000) {
      const s = open(session, RLS_PATH);
      s.close(NGHTTP2_CANCEL);
      resets++;
      if (resets % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    return { resets, seconds: (Date.now() - started) / 1000, goaway: await cut };
  }

  it('retires a connection that resets streams in a loop, accepts its reconnects, and serves another client', async () => {
    await settled();
    const good = new RawH2Client(`${t.grpcAddress}`);
    const latencies: number[] = [];
    let attacking = true;
    const measure = (async () => {
      while (attacking) {
        const started = performance.now();
        expect((await good.call(RLS_PATH, request, 3000)).grpcStatus).toBe(0);
        latencies.push(performance.now() - started);
      }
    })();
    const rounds = [];
    // The abuser comes from 127.0.0.2 (another peer than the good client) and reconnects after each GOAWAY.
    for (let round = 0; round < 3; round++) {
      const abuser = connect('127.0.0.2');
      const r = await resetLoop(abuser);
      rounds.push(r);
      expect(r.goaway).toBe(NGHTTP2_ENHANCE_YOUR_CALM);
      // Counted server-side per connection: burst + rate × time; the client may have sent a few more in flight.
      expect(r.resets).toBeLessThanOrEqual(LIMITS.grpcResetBurst + LIMITS.grpcResetRatePerS * r.seconds + 200);
      abuser.destroy();
    }
    // The next connection from the same address is accepted and answered.
    const again = connect('127.0.0.2');
    const answered = open(again, RLS_PATH);
    answered.end(request);
    expect(await statusOf(answered)).toBe('0');
    again.destroy();
    expect(await guardCount('reset_goaway')).toBe(3);
    expect(await guardCount('peer_refused')).toBe(0);
    attacking = false;
    await measure;
    good.close();
    const sorted = latencies.sort((a, b) => a - b);
    const resets = rounds.map((r) => `${r.resets} in ${r.seconds.toFixed(2)} s`).join(', ');
    console.log(
      `rapid reset: abuser's connections retired after ${resets}; good client ${sorted.length} calls, p50 ${sorted[Math.floor(sorted.length / 2)]?.toFixed(1)} ms, p99 ${sorted[Math.floor(sorted.length * 0.99)]?.toFixed(1)} ms`,
    );
  });

  it('never retires a connection that carries calls, however many of its streams it resets (as Envoy cancels)', async () => {
    await settled();
    const before = await guardCount('reset_goaway');
    const session = connect('127.0.0.3');
    let goaway = false;
    void goawayOf(session).then(() => (goaway = true));
    const first = open(session, RLS_PATH);
    first.end(request);
    expect(await statusOf(first)).toBe('0');
    // Twenty bursts' worth: whole calls cancelled at once, and streams reset before any message (Envoy's HTTP/2
    // stack sends RST_STREAM ahead of pending DATA), alternating.
    for (let i = 0; i < LIMITS.grpcResetBurst * 20 && !goaway; i++) {
      const s = open(session, RLS_PATH);
      if (i % 2 === 0) s.end(request);
      s.close(NGHTTP2_CANCEL);
      if (i % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    const last = open(session, RLS_PATH);
    last.end(request);
    expect(await statusOf(last)).toBe('0');
    expect(goaway).toBe(false);
    expect(await guardCount('reset_goaway')).toBe(before);
    session.destroy();
  });
});

describe('GRPC_RESET_REFUSE_ADDRESS (off by default)', () => {
  it('when on, refuses the reconnects of an address that ran dry', async () => {
    const refusing = await startTestService(RULES, { ...LIMITS, grpcResetRefuseAddress: true });
    try {
      const [host, port] = refusing.grpcAddress.split(':') as [string, string];
      const dial = () => {
        const s = http2.connect(`http://${refusing.grpcAddress}`, {
          createConnection: () => net.connect({ host, port: Number(port), localAddress: '127.0.0.2' }),
        });
        s.on('error', () => undefined);
        return s;
      };
      const abuser = dial();
      const cut = goawayOf(abuser);
      for (let i = 0; i < 5000 && !abuser.closed && !abuser.destroyed; i++) {
        open(abuser, RLS_PATH).close(NGHTTP2_CANCEL);
        if (i % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
      expect(await cut).toBe(NGHTTP2_ENHANCE_YOUR_CALM);
      abuser.destroy();
      const again = dial();
      expect(await goawayOf(again)).toBe('closed'); // closed before any HTTP/2 frame
      again.destroy();
      const text = await (await fetch(`${refusing.httpBase}/metrics`)).text();
      expect(Number(/^ratelimit_grpc_guard_total\{action="peer_refused"\} (\d+)$/m.exec(text)?.[1])).toBeGreaterThanOrEqual(1);
    } finally {
      await refusing.close();
    }
  });
});

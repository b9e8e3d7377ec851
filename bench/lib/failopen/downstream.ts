/**
 * What clients do at Envoy during an audit row: the probe (requests on the limited route, one at a time, every
 * answer kept), and the bounded downstream events: HTTP/2 rapid reset (HEADERS then RST_STREAM), clients
 * that disconnect mid-request at a set rate, idle connections, concurrent requests. Everything goes to
 * 127.0.0.1 and stops at a count or a duration, whichever comes first.
 */
import { connect, type Socket } from 'node:net';
import { frame } from '../../../test/support/h2-frames.js';
import { rawHttp } from '../../../test/support/http-raw.js';
import { LIMIT } from './stack.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** One request on `/limited` for probe key `key`; a refused or reset request counts as status 0. */
export function probeOnce(port: number, key: string): Promise<number> {
  return rawHttp(port, 'GET', '/limited', { 'x-probe': key }, 10_000).then(
    (a) => a.status,
    () => 0,
  );
}

/**
 * Probes `/limited` while running: every `everyMs`, LIMIT + 1 requests one after another on a key of their own, so
 * that each decision needs the store (no key is known to be over its limit before its last request); pause()
 * holds it between keys.
 */
export class Prober {
  /** The statuses each key got, in order. */
  readonly byKey = new Map<string, number[]>();
  private running = false;
  private paused = false;
  private inFlight = false;
  private loop: Promise<void> = Promise.resolve();
  private next = 0;

  constructor(
    private readonly port: number,
    private readonly everyMs: number,
    private readonly prefix: string,
    private readonly maxKeys = 2000,
  ) {}

  /** A key no request has used. */
  freshKey(): string {
    return `${this.prefix}-${this.next++}`;
  }

  record(key: string, status: number): void {
    const list = this.byKey.get(key) ?? [];
    list.push(status);
    this.byKey.set(key, list);
  }

  /** LIMIT + 1 requests on a fresh key, one after another. */
  async once(): Promise<void> {
    const key = this.freshKey();
    for (let i = 0; i <= LIMIT; i++) this.record(key, await probeOnce(this.port, key));
  }

  async burst(n: number): Promise<void> {
    for (let i = 0; i < n; i++) await this.once();
  }

  start(): void {
    this.running = true;
    this.loop = (async () => {
      while (this.running && this.byKey.size < this.maxKeys) {
        if (!this.paused) {
          this.inFlight = true;
          await this.once();
          this.inFlight = false;
        }
        await sleep(this.everyMs);
      }
    })();
  }

  /** Resolves once no probe is in flight. */
  async pause(): Promise<void> {
    this.paused = true;
    // a probe in flight ends within its own timeout (10 s)
    while (this.inFlight) await sleep(2);
  }

  resume(): void {
    this.paused = false;
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  statuses(): number[] {
    return [...this.byKey.values()].flat();
  }

  /** Admissions (200) beyond LIMIT, summed over the keys. */
  overLimit(): number {
    let n = 0;
    for (const list of this.byKey.values()) n += Math.max(0, list.filter((s) => s === 200).length - LIMIT);
    return n;
  }
}

export interface ResetResult {
  resets: number;
  connections: number;
}

/**
 * HEADERS (GET http://audit/open, END_STREAM) then RST_STREAM CANCEL, on streams `first`, `first + 2`, …: HPACK
 * :method GET (static 2), :scheme http (static 6), :path and :authority as literals with indexed names.
 */
function resetBatch(first: number, count: number): Buffer {
  const block = Buffer.from([0x82, 0x86, 0x04, 5, ...Buffer.from('/open'), 0x01, 5, ...Buffer.from('audit')]);
  const cancel = Buffer.from([0, 0, 0, 8]);
  const frames: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const id = first + 2 * i;
    frames.push(frame(0x1, 0x5, id, block), frame(0x3, 0, id, cancel));
  }
  return Buffer.concat(frames);
}

const PREFACE = Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), frame(0x4, 0, 0, Buffer.alloc(0))]);

/**
 * HTTP/2 rapid reset at Envoy, as an attacker sends it (frames written directly, so the client's own CPU is not
 * the limit): on `connections` connections at once, streams on `/open` opened and reset at once (HEADERS,
 * RST_STREAM CANCEL) in batches of 100, until `durationMs` or `maxResets`; a connection Envoy closes (its
 * premature-reset protection) is replaced.
 */
export async function rapidReset(port: number, o: { durationMs: number; connections: number; maxResets: number }): Promise<ResetResult> {
  const until = Date.now() + o.durationMs;
  const result: ResetResult = { resets: 0, connections: 0 };
  const worker = async (): Promise<void> => {
    while (Date.now() < until && result.resets < o.maxResets) {
      result.connections++;
      const socket = connect({ host: '127.0.0.1', port });
      let open = true;
      socket.on('error', () => undefined);
      socket.on('data', () => undefined); // Envoy's SETTINGS, answers and GOAWAY: read and dropped
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      void closed.then(() => (open = false));
      await new Promise<void>((resolve) => {
        socket.once('connect', () => resolve());
        socket.once('close', () => resolve());
      });
      if (open) socket.write(Buffer.concat([PREFACE, frame(0x4, 0x1, 0, Buffer.alloc(0))])); // our SETTINGS, and ACK of Envoy's
      let next = 1;
      while (open && Date.now() < until && result.resets < o.maxResets && next < 2 ** 30) {
        // wait for the socket to drain: at most one batch queued, so the rate is what Envoy reads
        if (!socket.write(resetBatch(next, 100))) await new Promise<void>((resolve) => socket.once('drain', () => resolve()).once('close', () => resolve()));
        next += 200;
        result.resets += 100;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      socket.destroy();
      await closed;
    }
  };
  await Promise.all(Array.from({ length: o.connections }, worker));
  return result;
}

/**
 * Clients that send a request on `/open` and close their connection before the answer, `ratePerS` a second for
 * `durationMs` (at most `maxInFlight` at once): Envoy cancels each of those rate-limit calls.
 */
export async function disconnectingClients(
  port: number,
  o: { ratePerS: number; durationMs: number; maxInFlight: number },
): Promise<{ sent: number; skipped: number }> {
  const start = performance.now();
  let due = 0;
  let sent = 0;
  let skipped = 0;
  let inFlight = 0;
  const one = (): void => {
    inFlight++;
    const s = connect({ host: '127.0.0.1', port });
    const done = (): void => {
      inFlight--;
    };
    s.once('close', done);
    s.on('error', () => undefined);
    s.once('connect', () => {
      s.write('GET /open HTTP/1.1\r\nhost: audit\r\n\r\n');
      // long enough for Envoy to have read the request and made its rate-limit call, not for the answer
      setTimeout(() => s.destroy(), 1);
    });
  };
  while (performance.now() - start < o.durationMs) {
    const target = Math.floor(((performance.now() - start) * o.ratePerS) / 1000);
    for (; due < target; due++) {
      if (inFlight >= o.maxInFlight) skipped++;
      else {
        one();
        sent++;
      }
    }
    await sleep(5);
  }
  for (let i = 0; i < 400 && inFlight > 0; i++) await sleep(5);
  return { sent, skipped };
}

/** `n` connections to Envoy that send nothing; close() ends them. */
export async function idleConnections(port: number, n: number): Promise<{ opened: number; close(): void }> {
  const sockets: Socket[] = [];
  let opened = 0;
  await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<void>((resolve) => {
          const s = connect({ host: '127.0.0.1', port });
          sockets.push(s);
          s.on('error', () => resolve());
          s.once('connect', () => {
            opened++;
            resolve();
          });
        }),
    ),
  );
  return { opened, close: () => sockets.forEach((s) => s.destroy()) };
}

/** `n` requests at once on one fresh probe key, each on its own connection. */
export async function concurrentProbes(probe: Prober, port: number, n: number): Promise<void> {
  const key = probe.freshKey();
  for (const status of await Promise.all(Array.from({ length: n }, () => probeOnce(port, key)))) probe.record(key, status);
}

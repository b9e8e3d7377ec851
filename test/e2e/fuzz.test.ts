/**
 * Fuzz: at least 100,000 malformed RateLimitRequest messages over the real gRPC socket of the
 * service running as its own process: random bytes, truncated and mutated valid encodings, wrong wire types,
 * huge lengths, deep nesting, invalid UTF-8, extreme numbers, oversized messages; sent with high concurrency
 * on a few HTTP/2 connections. The process must live, every call must end with OK (overall OK/OVER_LIMIT),
 * INVALID_ARGUMENT or RESOURCE_EXHAUSTED (never INTERNAL/UNKNOWN, never a hang), oversized messages must be
 * refused, and a valid request must still get a correct answer. FUZZ_SEED replays a run, FUZZ_REQUESTS sizes it.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fields, RLS_PATH, encodeRequest } from '../support/raw-rls.js';
import { grpcFrame, HANG, RawH2Client, type H2Outcome } from '../support/raw-h2.js';
import { malformed, oversized } from '../support/malformed.js';
import { prng } from '../support/prng.js';
import { gauge, scrapeMetrics } from '../support/scrape.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';

const REQUESTS = Number(process.env['FUZZ_REQUESTS'] ?? 100_000);
const SEED = process.env['FUZZ_SEED'] ?? String(Date.now());
const CONNECTIONS = 4;
const IN_FLIGHT = 256;
/** gRPC deadline of each call; a call with no status 2 s after it counts as a hang. Generous: 7 other jobs share 2 cores. */
const TIMEOUT_MS = 20_000;
const STATUS = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
];
const name = (s: number) => (s === HANG ? 'HANG' : s < 0 ? 'RESET' : (STATUS[s] ?? String(s)));

let service: ServiceProcess;
let dir: string;
let died: string | undefined;
let stderrTail = '';
const clients: RawH2Client[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rl-fuzz-'));
  copyFileSync(join(import.meta.dirname, '../../config/example.yaml'), join(dir, 'example.yaml'));
  service = await spawnService({ CONFIG_DIR: dir, BACKEND: 'memory', LOG_LEVEL: 'info' });
  service.child.stderr?.on('data', (c: Buffer) => (stderrTail = (stderrTail + c.toString()).slice(-3000)));
  service.child.once('exit', (code, signal) => (died = signal ? `signal ${signal}` : `code ${code}`));
  for (let i = 0; i < CONNECTIONS; i++) clients.push(new RawH2Client(service.grpcAddress));
});

afterAll(async () => {
  for (const c of clients) c.close();
  await service?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Is this how a call may end? OK with overall_code OK/OVER_LIMIT, or a refusal as invalid / too big. */
function acceptable(o: H2Outcome): boolean {
  if (o.grpcStatus === 3 || o.grpcStatus === 8) return true;
  if (o.grpcStatus !== 0) return false;
  const overall = fields(o.body).get(1)?.[0];
  return overall === 1 || overall === 2;
}

interface Tally {
  byStatus: Map<string, number>;
  bad: string[];
}

function note(t: Tally, kind: string, bytes: Buffer, o: H2Outcome): void {
  const key = `${kind}: ${name(o.grpcStatus)}`;
  t.byStatus.set(key, (t.byStatus.get(key) ?? 0) + 1);
  if (!acceptable(o) && t.bad.length < 10)
    t.bad.push(
      `${kind} → ${name(o.grpcStatus)} ${o.message.slice(0, 160)} (bytes ${bytes.subarray(0, 48).toString('hex')}${bytes.length > 48 ? `… ${bytes.length} B` : ''})`,
    );
}

describe('fuzz: malformed requests over gRPC', () => {
  it(`answers ${REQUESTS} malformed messages with OK, INVALID_ARGUMENT or RESOURCE_EXHAUSTED and lives`, async () => {
    const r = prng(`fuzz-${SEED}`);
    const t: Tally = { byStatus: new Map(), bad: [] };
    const started = performance.now();
    let sent = 0;
    const worker = async (w: number) => {
      const client = clients[w % CONNECTIONS]!;
      while (sent < REQUESTS && died === undefined) {
        sent++;
        const m = malformed(r);
        note(t, m.kind, m.bytes, await client.call(RLS_PATH, grpcFrame(m.bytes), TIMEOUT_MS));
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, (_, w) => worker(w)));
    const seconds = (performance.now() - started) / 1000;
    const table = [...t.byStatus]
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `  ${k}: ${n}`)
      .join('\n');
    const text = `seed ${SEED} (FUZZ_SEED to replay): ${sent} calls in ${seconds.toFixed(1)} s (${(sent / seconds).toFixed(0)}/s)\n${table}\n${t.bad.map((b) => `  bad: ${b}`).join('\n')}${died ? `\nDIED (${died}):\n${stderrTail}` : ''}`;
    console.log(text);
    expect(died, text).toBeUndefined();
    expect(sent, text).toBeGreaterThanOrEqual(REQUESTS);
    expect(t.bad, text).toEqual([]);
  }, 400_000);

  it('refuses oversized messages (too many descriptors, too long a value, over 4 MiB) without freezing', async () => {
    const r = prng(`fuzz-big-${SEED}`);
    const cases: [string, Buffer][] = [
      ['10,000 descriptors', oversized(r, 'descriptors', 10_000)],
      ['100,000 descriptors', oversized(r, 'descriptors', 100_000)],
      ['a 300 KB value', oversized(r, 'value', 300_000)],
      ['a 5 MiB value', oversized(r, 'value', 5 * 1024 * 1024)],
    ];
    const lines: string[] = [];
    for (const [what, bytes] of cases) {
      const client = new RawH2Client(service.grpcAddress); // its own connection: one big body at a time
      const t0 = performance.now();
      const o = await client.call(RLS_PATH, grpcFrame(bytes), TIMEOUT_MS);
      client.close();
      lines.push(`${what} (${bytes.length} B): ${name(o.grpcStatus)} in ${(performance.now() - t0).toFixed(0)} ms ${o.message.slice(0, 120)}`);
    }
    const text = lines.join('\n') + (died ? `\nDIED (${died}):\n${stderrTail}` : '');
    console.log(text);
    expect(died, text).toBeUndefined();
    for (const line of lines) expect(line, text).toMatch(/: (INVALID_ARGUMENT|RESOURCE_EXHAUSTED) in/);
  }, 60_000);

  it('breaks the gRPC framing (compressed flag, short or long length prefix, two messages) and still answers', async () => {
    const r = prng(`fuzz-frame-${SEED}`);
    const lines = new Map<string, number>();
    for (let i = 0; i < 400; i++) {
      const valid = Buffer.from(encodeRequest('edge', [{ entries: [['remote_address', `10.9.9.${i % 250}`]] }]));
      const framed = grpcFrame(valid);
      const kind = r.pick(['compressed flag', 'length too long', 'length too short', 'two messages', 'prefix only', 'empty body']);
      const payload =
        kind === 'compressed flag'
          ? grpcFrame(valid, 1)
          : kind === 'length too long'
            ? Buffer.concat([framed.subarray(0, 1), Buffer.from([0, 0, 1, 0]), valid])
            : kind === 'length too short'
              ? Buffer.concat([framed.subarray(0, 4), Buffer.from([Math.max(0, valid.length - 3)]), valid])
              : kind === 'two messages'
                ? Buffer.concat([framed, framed])
                : kind === 'prefix only'
                  ? framed.subarray(0, r.int(1, 4))
                  : Buffer.alloc(0);
      const o = await clients[i % CONNECTIONS]!.call(RLS_PATH, payload, TIMEOUT_MS);
      const key = `${kind}: ${name(o.grpcStatus)}`;
      lines.set(key, (lines.get(key) ?? 0) + 1);
    }
    const text = [...lines].map(([k, n]) => `${k}: ${n}`).join('\n') + (died ? `\nDIED (${died}):\n${stderrTail}` : '');
    console.log(text);
    expect(died, text).toBeUndefined();
    // grpc-js owns the framing and may end these with any status (INTERNAL included): the service's code
    // never sees them. What must hold: every call ends with a status, none hangs, the process lives.
    expect(
      [...lines.keys()].filter((k) => k.endsWith(': HANG') || k.endsWith(': RESET')),
      text,
    ).toEqual([]);
  }, 60_000);

  it('still answers a valid request correctly afterwards, with bounded memory', async () => {
    const o = await clients[0]!.call(RLS_PATH, grpcFrame(encodeRequest('edge', [{ entries: [['remote_address', `10.200.${SEED.length}.7`]] }])), TIMEOUT_MS);
    expect(name(o.grpcStatus)).toBe('OK');
    const status = fields(fields(o.body).get(2)![0] as Uint8Array);
    expect(status.get(1)?.[0]).toBe(1);
    expect(status.get(3)?.[0]).toBe(19); // per_ip: 20 per second, one used
    const rss = gauge(await scrapeMetrics(service.httpAddress), 'ratelimit_process_resident_memory_bytes') ?? 0;
    console.log(`RSS after the fuzz: ${(rss / 2 ** 20).toFixed(0)} MiB`);
    expect(rss).toBeGreaterThan(0);
    expect(rss).toBeLessThan(256 * 2 ** 20);
  });
});

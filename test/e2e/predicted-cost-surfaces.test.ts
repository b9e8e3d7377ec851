/**
 * Admission by predicted cost at the operator surfaces and across replicas: `ratelimit query` and POST /json show
 * the prediction P of a predict_cost rule (and query's dry run judges the request by P, which admission charges);
 * two replicas on one Redis share the counters and each learns P from the settlements it receives, converging
 * within one window of settled traffic (docs/costs.md).
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runQuery } from '../../src/cli/query.js';
import { RawRlsClient } from '../support/raw-rls.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { startTestService, type TestService } from '../support/service.js';

const RULES = `domain: llm
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 10000, predict_cost: {initial: 500, window: 1m}}
`;
const T0 = 1_700_000_040_000;

function sink(): Writable & { text: () => string } {
  const chunks: string[] = [];
  const w = new Writable({ write: (c: Buffer, _e, cb) => void (chunks.push(c.toString()), cb()) });
  return Object.assign(w, { text: () => chunks.join('') });
}

const settlement = (user: string, predicted: number, actual: number) => ({
  entries: [['user', user] as [string, string], ['predicted_cost', String(predicted)] as [string, string]],
  hitsAddend: actual,
});

describe('predicted cost at the operator surfaces', () => {
  let t: TestService;
  let client: RawRlsClient;
  beforeAll(async () => {
    t = await startTestService({ 'llm.yaml': RULES }, { jsonApi: 'on' });
    t.clock.set(T0 + 1000);
    client = new RawRlsClient(t.grpcAddress);
  });
  afterAll(async () => {
    client.close();
    await t.close();
  });

  const query = async (...args: string[]) => {
    const out = sink();
    const code = await runQuery(['--server', t.grpcAddress, '--domain', 'llm', ...args], out, sink());
    return { code, text: out.text() };
  };

  it('ratelimit query shows P, and its dry run judges the request by P', async () => {
    const first = await query('user=q');
    expect(first.code).toBe(0);
    expect(first.text).toContain('  predicted cost: 500 (charged at admission instead of the hits)\n');
    expect(first.text).toContain('a request charged its predicted cost 500 would be admitted\n');
    expect(first.text).toContain('remaining 9500 after this request');
    await client.call('llm', [settlement('q', 500, 9800)]); // count 9300; P = 9800
    const second = await query('user=q');
    expect(second.text).toContain('  predicted cost: 9800 (charged at admission instead of the hits)\n');
    expect(second.code).toBe(3); // 700 left: a request charged 9800 would be rejected
    const json = await query('--json', 'user=q');
    expect((JSON.parse(json.text) as { dynamic_metadata?: unknown }).dynamic_metadata).toEqual({ predicted_cost: '9800' });
  });

  it('POST /json shows P in the dynamic metadata', async () => {
    const res = await fetch(`${t.httpBase}/json`, {
      method: 'POST',
      body: JSON.stringify({ domain: 'llm', descriptors: [{ entries: [{ key: 'user', value: 'j' }] }] }),
    });
    const body = (await res.json()) as { dynamicMetadata?: Record<string, unknown> };
    expect(res.status).toBe(200);
    expect(body.dynamicMetadata).toEqual({ predicted_cost: '9800' });
  });
});

describe('predicted cost across replicas (Redis)', () => {
  let redis: RedisServer;
  let a: TestService;
  let b: TestService;
  let ca: RawRlsClient;
  let cb: RawRlsClient;
  beforeAll(async () => {
    redis = await startRedis();
    a = await startTestService({ 'llm.yaml': RULES }, { backend: 'redis', redisUrl: redis.url });
    b = await startTestService({ 'llm.yaml': RULES }, { backend: 'redis', redisUrl: redis.url });
    ca = new RawRlsClient(a.grpcAddress);
    cb = new RawRlsClient(b.grpcAddress);
  });
  afterAll(async () => {
    ca.close();
    cb.close();
    await a.close();
    await b.close();
    await redis.stop();
  });

  const predicted = async (c: RawRlsClient) => {
    const r = await c.call('llm', [{ entries: [['user', 'probe']], hitsAddend: 0 }]);
    const p = r.dynamicMetadata.get('predicted_cost');
    return p === undefined ? undefined : Buffer.from(p.value as Uint8Array).toString('utf8');
  };
  const at = (ms: number) => {
    a.clock.set(ms);
    b.clock.set(ms);
  };

  it('share the counters; each learns P from its settlements and they converge within one window', async () => {
    at(T0 + 1000);
    // Replica a alone receives settlements of 800: a predicts 800, b still the initial 500.
    for (let i = 0; i < 4; i++) expect((await ca.call('llm', [settlement('u', 500, 800)])).overallCode).toBe(1);
    expect(await predicted(ca)).toBe('800');
    expect(await predicted(cb)).toBe('500');
    // The settlements were counted once, in the shared counter: 4 × (800 − 500).
    const seen = await cb.call('llm', [{ entries: [['user', 'u']], hitsAddend: 0 }]);
    expect(seen.statuses[0]!.limitRemaining).toBe(10000 - 1200);
    // A window later, settlements of 1,200 spread over both replicas, as Envoy spreads its calls: both predict 1,200.
    at(T0 + 61_000 + 6_000);
    for (let i = 0; i < 6; i++) await (i % 2 === 0 ? ca : cb).call('llm', [settlement('v', 1000, 1200)]);
    expect(await predicted(ca)).toBe('1200');
    expect(await predicted(cb)).toBe('1200');
  });
});

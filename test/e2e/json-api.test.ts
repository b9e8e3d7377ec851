/**
 * POST /json modes (anyone who reaches the admin port must not be able to spend any client's quota).
 * JSON_API=check (the default) answers what ShouldRateLimit would answer and consumes nothing; `off` has no
 * route. Checked over real sockets against the memory store and a real redis-server, comparing each check
 * with the gRPC call that follows it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALGORITHM_NAMES } from '../../src/vocab/algorithm-names.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { RlsTestClient, type WireResponse } from '../support/rls-client.js';
import { startTestService, type TestService } from '../support/service.js';

const RULES = `
domain: web
descriptors:
${ALGORITHM_NAMES.map((a) => `  - key: algo\n    value: ${a}\n    rate_limit: {unit: minute, requests_per_unit: 3, algorithm: ${a}${a.endsWith('bucket') ? ', burst: 3' : ''}}`).join('\n')}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
`;

interface JsonAnswer {
  status: number;
  json: {
    overallCode: string;
    statuses: { code: string; limitRemaining: number; currentLimit?: { requestsPerUnit: number }; durationUntilReset?: string }[];
    error?: string;
  };
}

async function postJson(base: string, body: unknown): Promise<JsonAnswer> {
  const res = await fetch(`${base}/json`, { method: 'POST', body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as JsonAnswer['json'] };
}

/** The parts a check must predict exactly: codes, remaining quota and the limit. */
function fromJson(a: JsonAnswer): unknown {
  return { overall: a.json.overallCode, statuses: a.json.statuses.map((s) => [s.code, s.limitRemaining, s.currentLimit?.requestsPerUnit]) };
}
function fromGrpc(r: WireResponse): unknown {
  return { overall: r.overall_code, statuses: r.statuses.map((s) => [s.code, s.limit_remaining, s.current_limit?.requests_per_unit]) };
}

const entries = (pairs: string[][]) => pairs.map(([key, value]) => ({ key, value }));

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});

describe.each(['memory', 'redis'] as const)('JSON_API=check (the default) on the %s store', (backend) => {
  let t: TestService;
  let client: RlsTestClient;
  beforeAll(async () => {
    t = await startTestService({ 'web.yaml': RULES }, backend === 'redis' ? { backend, redisUrl: redis.url, cacheKeyPrefix: 'json-check:' } : {});
    client = new RlsTestClient(t.grpcAddress);
  });
  afterAll(async () => {
    client.close();
    await t.close();
  });

  it('consumes nothing, however often it is asked', async () => {
    const body = { domain: 'web', descriptors: [{ entries: entries([['algo', 'fixed_window']]) }] };
    for (let i = 0; i < 5; i++) {
      const a = await postJson(t.httpBase, body);
      expect(a.status).toBe(200);
      expect(a.json.statuses[0]).toMatchObject({ code: 'OK', limitRemaining: 2 });
    }
    const real = await client.ask('web', [[['algo', 'fixed_window']]], 0);
    expect(real.statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 2 });
  });

  for (const algorithm of ALGORITHM_NAMES) {
    it(`predicts the next ShouldRateLimit answer exactly with ${algorithm} (1 and 2 hits, up to over the limit)`, async () => {
      for (const hits of [1, 2, 1, 1, 2]) {
        const descriptors = [[['algo', algorithm]], [['shadow', `s-${algorithm}`]]];
        const check = await postJson(t.httpBase, { domain: 'web', descriptors: descriptors.map((d) => ({ entries: entries(d) })), hitsAddend: hits });
        const real = await client.ask('web', descriptors, hits);
        expect(fromJson(check), `hits ${hits}`).toEqual(fromGrpc(real));
        // An admitted request's reset is the time until the limit is whole after taking the hits, on both
        // surfaces (a token bucket's 1 s, not the untouched state's 0 s). A rejection's may differ (check-only.ts).
        if (real.overall_code === 'OK')
          expect(check.json.statuses[0]!.durationUntilReset, `hits ${hits}`).toBe(`${real.statuses[0]!.duration_until_reset!.seconds}s`);
        expect(check.status).toBe(real.overall_code === 'OVER_LIMIT' ? 429 : 200);
      }
    });
  }

  it('counts a descriptor sent twice twice, as a real call does', async () => {
    // A fresh key through a per-request override (3 per minute), two descriptors of 2 hits each:
    const fresh = {
      domain: 'web',
      descriptors: [0, 1].map(() => ({ entries: entries([['twice', 'x']]), limit: { requestsPerUnit: 3, unit: 'MINUTE' } })),
      hitsAddend: 2,
    };
    const check = await postJson(t.httpBase, fresh);
    expect(check.json.overallCode).toBe('OVER_LIMIT');
    expect(check.json.statuses.map((s) => [s.code, s.limitRemaining])).toEqual([
      ['OK', 3],
      ['OVER_LIMIT', 0],
    ]);
    const real = await client.shouldRateLimit({
      domain: 'web',
      descriptors: [0, 1].map(() => ({ entries: entries([['twice', 'x']]), limit: { requests_per_unit: 3, unit: 'MINUTE' } })),
      hits_addend: 2,
    });
    expect(fromGrpc(real)).toEqual(fromJson(check));
  });
});

describe('JSON_API=off', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ 'web.yaml': RULES }, { jsonApi: 'off' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('has no /json route', async () => {
    const a = await postJson(t.httpBase, { domain: 'web', descriptors: [{ entries: entries([['algo', 'fixed_window']]) }] });
    expect(a).toEqual({ status: 404, json: { error: 'POST /json is disabled (JSON_API=off)' } });
    expect((await fetch(`${t.httpBase}/json`)).status).toBe(404);
    const other = await fetch(`${t.httpBase}/nope`);
    expect(((await other.json()) as { routes: string[] }).routes).not.toContain('POST /json');
  });
});

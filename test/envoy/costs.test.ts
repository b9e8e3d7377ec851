/**
 * Costs charged after the response (docs/costs.md), proved through a real Envoy 1.40: the priced pattern of two
 * RateLimitPerRoute entries (a check with hits_addend 0 at request time, and the price read from the upstream's
 * response at stream end with apply_on_stream_done), against a limit with count_every_hit and one without.
 * With count_every_hit the charge that crosses the limit is counted and the next request gets 429; without it
 * the crossing charge is dropped (a rejected request consumes nothing) and the next request passes.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { rlsBootstrap } from '../support/envoy-bootstrap.js';
import { describeEnvoy } from '../support/envoy.js';
import { startEnvoyStack, warmUp, type Backend, type EnvoyStack } from '../support/envoy-stack.js';
import { eventually } from '../support/eventually.js';
import { RlsTestClient } from '../support/rls-client.js';
import { scrapeMetrics } from '../support/scrape.js';

const RULES = `domain: llm
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 100, count_every_hit: true}
  - key: plain_user
    rate_limit: {unit: minute, requests_per_unit: 100}
`;

/** The two entries of the priced pattern for one descriptor key (docs/envoy.md, "What Envoy 1.40 sends"). */
const priced = (key: string) => {
  const actions = [{ request_headers: { header_name: 'x-user-id', descriptor_key: key } }];
  return [
    { actions, hits_addend: { number: 0 } },
    { actions, hits_addend: { format: '%RESP(x-cost)%' }, apply_on_stream_done: true },
  ];
};

for (const backend of ['memory', 'redis'] as Backend[]) {
  describeEnvoy(`costs charged after the response through Envoy (${backend})`, () => {
    let stack: EnvoyStack;
    let client: RlsTestClient;
    beforeAll(async () => {
      stack = await startEnvoyStack({
        backend,
        rules: { 'llm.yaml': RULES },
        // The upstream reports the request's price (its x-price header) in x-cost, as an LLM gateway reports tokens.
        upstream: (req, res) => {
          res.writeHead(200, { 'x-cost': String(req.headers['x-price'] ?? '0') });
          res.end('answer');
        },
        config: ({ service, upstream }) =>
          rlsBootstrap({
            service,
            upstream,
            domain: 'llm',
            routes: [
              { prefix: '/counted', perRoute: true, rateLimits: priced('user') },
              { prefix: '/plain', perRoute: true, rateLimits: priced('plain_user') },
            ],
          }),
      });
      client = new RlsTestClient(stack.service.grpcAddress);
      await warmUp(stack, 'app', () => fetch(`${stack.url}/counted`, { headers: { 'x-user-id': 'warm-up', 'x-price': '0' } }));
    });
    afterAll(async () => {
      client?.close();
      await stack?.close();
    });

    /** What the service has counted for a descriptor: a pure check (hits_addend 0) reads it without counting. */
    const remaining = async (key: string, user: string): Promise<number> => {
      const r = await client.shouldRateLimit({ domain: 'llm', descriptors: [{ entries: [{ key, value: user }], hits_addend: { value: 0 } }] });
      return Number(r.statuses?.[0]?.limit_remaining ?? -1);
    };
    /** OVER_LIMIT decisions the service made (the stream-done call of a crossing charge is one). */
    const overLimitDecisions = async (): Promise<number> => {
      const samples = await scrapeMetrics(stack.service.httpBase.replace('http://', ''));
      let n = 0;
      for (const [series, value] of samples) if (series.startsWith('ratelimit_decisions_total{') && series.includes('code="OVER_LIMIT"')) n += value;
      return n;
    };
    const send = async (path: string, user: string, price: number): Promise<number> => {
      const res = await fetch(`${stack.url}${path}`, { headers: { 'x-user-id': user, 'x-price': String(price) } });
      await res.arrayBuffer();
      return res.status;
    };

    it('count_every_hit: the charge that crosses the limit counts, and the next request gets 429', async () => {
      expect(await send('/counted', 'u1', 70)).toBe(200);
      await eventually(async () => (await remaining('user', 'u1')) === 30, { what: 'the first charge (70) counted' });
      expect(await send('/counted', 'u1', 45)).toBe(200); // checked at request time with 70 of 100 used
      // 115 of 100: counted although it crosses the limit (remaining reads 0)
      await eventually(async () => (await remaining('user', 'u1')) === 0, { what: 'the crossing charge (45) counted' });
      const third = await fetch(`${stack.url}/counted`, { headers: { 'x-user-id': 'u1', 'x-price': '1' } });
      await third.arrayBuffer();
      expect(third.status).toBe(429);
      expect(third.headers.get('x-envoy-ratelimited')).not.toBeNull();
    });

    it('without count_every_hit the crossing charge is dropped and the next request passes', async () => {
      expect(await send('/plain', 'u2', 70)).toBe(200);
      await eventually(async () => (await remaining('plain_user', 'u2')) === 30, { what: 'the first charge (70) counted' });
      const before = await overLimitDecisions();
      expect(await send('/plain', 'u2', 45)).toBe(200);
      // The stream-done call for 45 is answered OVER_LIMIT and consumes nothing: the count stays at 70.
      await eventually(async () => (await overLimitDecisions()) === before + 1, { what: 'the stream-done call for 45 decided' });
      expect(await remaining('plain_user', 'u2')).toBe(30);
      expect(await send('/plain', 'u2', 1)).toBe(200);
      await eventually(async () => (await remaining('plain_user', 'u2')) === 29, { what: 'the small charge (1) counted' });
    });
  });
}

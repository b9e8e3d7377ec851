/**
 * Admission by predicted cost through a real Envoy 1.40, with the Envoy config docs/costs.md ships (read from the
 * page): the upstream reports each response's cost in a header, Envoy's header_to_metadata filter puts it into
 * dynamic metadata, and the rate-limit filter settles it at stream end with the prediction it got at admission.
 *
 * Side by side with charging after the response alone (a pure check at request time, the cost charged at stream
 * end with count_every_hit): 20 concurrent requests of actual cost 1,000 against 10,000 a minute. The upstream
 * holds every request it gets until all 20 are decided, so no cost lands before the last admission: the worst
 * case for charging after the response, and the case a prediction exists for. The figures are written to
 * docs/costs.md; COSTS_REPORT=1 prints them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse } from 'yaml';
import { rlsBootstrap } from '../support/envoy-bootstrap.js';
import { describeEnvoy } from '../support/envoy.js';
import { startEnvoyStack, warmUp, type Backend, type EnvoyStack } from '../support/envoy-stack.js';
import { eventually } from '../support/eventually.js';
import { RawRlsClient } from '../support/raw-rls.js';
import { scrapeMetrics } from '../support/scrape.js';

const LIMIT = 10_000;
const CONCURRENT = 20;
const COST = 1_000;
const MINUTE = 2; // RateLimitResponse.RateLimit.Unit MINUTE

const RULES = `domain: llm
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: ${LIMIT}, predict_cost: {initial: 500, window: 5m}}
  - key: after_user
    rate_limit: {unit: minute, requests_per_unit: ${LIMIT}, count_every_hit: true}
`;

type Obj = Record<string, unknown>;

/** The ```yaml block of docs/costs.md whose first line starts with `marker`, parsed. */
function docsBlock(marker: string): unknown {
  const page = readFileSync(join(import.meta.dirname, '../../docs/costs.md'), 'utf8');
  const blocks = [...page.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const block = blocks.find((b) => b.startsWith(marker));
  if (block === undefined) throw new Error(`docs/costs.md has no yaml block starting with '${marker}'`);
  return parse(block);
}

const routeConfig = docsBlock('# fragment of a route: admission by predicted cost') as {
  typed_per_filter_config: Record<string, { rate_limits: Obj[] }>;
};
const predictedLimits = routeConfig.typed_per_filter_config['envoy.filters.http.ratelimit']!.rate_limits;
const costFilters = docsBlock('# fragment of http_filters') as Obj[];

/** Charging after the response alone: a pure check at request time, the cost at stream end. */
const afterOnlyLimits: Obj[] = [
  { actions: [{ request_headers: { header_name: 'x-user-id', descriptor_key: 'after_user' } }], hits_addend: { number: 0 } },
  {
    actions: [{ request_headers: { header_name: 'x-user-id', descriptor_key: 'after_user' } }],
    hits_addend: { format: '%DYNAMIC_METADATA(costs:cost)%' },
    apply_on_stream_done: true,
  },
];

interface Burst {
  admitted: number;
  admittedCost: number;
  counter: number;
  actualSum: number;
}

for (const backend of ['memory', 'redis'] as Backend[]) {
  describeEnvoy(`admission by predicted cost through Envoy (${backend})`, () => {
    let stack: EnvoyStack;
    let client: RawRlsClient;
    /** Requests the upstream holds until released (holding is on while `hold` is true). */
    const held: (() => void)[] = [];
    let hold = false;
    beforeAll(async () => {
      stack = await startEnvoyStack({
        backend,
        rules: { 'llm.yaml': RULES },
        // The upstream reports the request's cost (its x-price header) in x-cost, as an LLM reports tokens.
        upstream: (req, res: ServerResponse) => {
          const answer = () => {
            const price = req.headers['x-price'];
            res.writeHead(200, price === 'none' ? {} : { 'x-cost': String(price ?? '0') });
            res.end('answer');
          };
          if (hold) held.push(answer);
          else answer();
        },
        config: ({ service, upstream }) =>
          rlsBootstrap({
            service,
            upstream,
            domain: 'llm',
            before: costFilters,
            routes: [
              { prefix: '/predicted', perRoute: true, rateLimits: predictedLimits },
              { prefix: '/after', perRoute: true, rateLimits: afterOnlyLimits },
            ],
          }),
      });
      client = new RawRlsClient(stack.service.grpcAddress);
      await warmUp(stack, 'app', () => fetch(`${stack.url}/after`, { headers: { 'x-user-id': 'warm-up', 'x-price': '0' } }));
    });
    afterAll(async () => {
      hold = false;
      for (const release of held.splice(0)) release();
      client?.close();
      await stack?.close();
    });

    /** The counter of a descriptor, read exactly: a pure check under a per-request limit far above it (same key). */
    const counter = async (key: string, user: string): Promise<number> => {
      const big = 1_000_000_000;
      const r = await client.call('llm', [{ entries: [[key, user]], limit: { requestsPerUnit: big, unit: MINUTE }, hitsAddend: 0 }]);
      return big - r.statuses[0]!.limitRemaining;
    };
    const prediction = async (): Promise<string | undefined> => {
      const r = await client.call('llm', [{ entries: [['user', 'probe']], hitsAddend: 0 }]);
      const p = r.dynamicMetadata.get('predicted_cost');
      return p === undefined ? undefined : Buffer.from(p.value as Uint8Array).toString('utf8');
    };
    const send = async (path: string, user: string, price: number | 'none'): Promise<number> => {
      const res = await fetch(`${stack.url}${path}`, { headers: { 'x-user-id': user, 'x-price': String(price) } });
      await res.arrayBuffer();
      return res.status;
    };

    /** 20 concurrent requests; the upstream answers none before all are decided. */
    const burst = async (path: string, key: string, user: string, price: (i: number) => number): Promise<Burst> => {
      hold = true;
      let rejected = 0;
      const statuses = Array.from({ length: CONCURRENT }, (_, i) =>
        send(path, user, price(i)).then((s) => {
          if (s === 429) rejected++;
          return s;
        }),
      );
      await eventually(() => held.length + rejected === CONCURRENT, { timeoutMs: 20_000, what: 'all 20 requests decided' });
      hold = false;
      for (const release of held.splice(0)) release();
      const done = await Promise.all(statuses);
      expect(done.every((s) => s === 200 || s === 429)).toBe(true);
      let admitted = 0;
      let admittedCost = 0;
      done.forEach((s, i) => {
        if (s === 200) {
          admitted++;
          admittedCost += price(i);
        }
      });
      // Every admitted request's cost settles at stream end.
      await eventually(async () => (await counter(key, user)) === admittedCost, { timeoutMs: 10_000, what: 'the settlements counted' });
      return { admitted, admittedCost, counter: await counter(key, user), actualSum: admittedCost };
    };

    it('admitted cost stays within 1.2x the limit once the estimator has seen the traffic; charging after alone admits 2x', async () => {
      // A window's traffic for the estimator (the rule's, another user): sequential requests of cost 1,000.
      expect(await prediction()).toBe('500');
      for (let i = 0; i < 10; i++) expect(await send('/predicted', 'learner', COST)).toBe(200);
      await eventually(async () => (await prediction()) === String(COST), { timeoutMs: 10_000, what: 'the estimator at 1000' });
      expect(await counter('user', 'learner')).toBe(10 * COST);

      const predicted = await burst('/predicted', 'user', 'burst-p', () => COST);
      const after = await burst('/after', 'after_user', 'burst-a', () => COST);
      if (process.env.COSTS_REPORT === '1') process.stdout.write(`${backend} ${JSON.stringify({ predicted, after })}\n`);
      expect(predicted.admittedCost).toBeLessThanOrEqual(1.2 * LIMIT);
      expect(predicted.admitted).toBe(LIMIT / COST);
      expect(predicted.counter).toBe(predicted.actualSum);
      expect(after.admittedCost).toBe(2 * LIMIT);
      expect(after.counter).toBe(after.actualSum);
    });

    it('costs that differ from request to request: the refunds and charges leave the counter at the sum of actual costs', async () => {
      // Costs 400..1,600 (mean 1,000), another user, the estimator already at about 1,000.
      const price = (i: number) => 400 + ((i * 7919) % 13) * 100;
      const varied = await burst('/predicted', 'user', 'burst-v', price);
      if (process.env.COSTS_REPORT === '1') process.stdout.write(`${backend} varied ${JSON.stringify(varied)}\n`);
      expect(varied.admittedCost).toBeLessThanOrEqual(1.2 * LIMIT);
      expect(varied.counter).toBe(varied.actualSum);
    });

    it('a response that reports no cost sends no settlement: its prediction stays charged', async () => {
      /** Calls that carried predicted_cost: settled, or counted as ordinary charges. */
      const settlements = async () => {
        const samples = await scrapeMetrics(stack.service.httpBase.replace('http://', ''));
        let n = 0;
        for (const [series, value] of samples)
          if (series.startsWith('ratelimit_cost_settlements_total{') || series.startsWith('ratelimit_cost_ordinary_charges_total{')) n += value;
        return n;
      };
      const p = Number(await prediction());
      const before = await settlements();
      expect(await send('/predicted', 'no-cost', 'none')).toBe(200);
      // A later request's settlement is the barrier: by then Envoy has long finished the first stream.
      expect(await send('/predicted', 'barrier', COST)).toBe(200);
      await eventually(async () => (await counter('user', 'barrier')) === COST, { timeoutMs: 10_000, what: 'the barrier settled' });
      expect(await counter('user', 'no-cost')).toBe(p);
      expect(await settlements()).toBe(before + 1);
    });
  });
}

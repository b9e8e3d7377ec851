/**
 * on_limit as a client of a real Envoy sees it (docs/on-limit.md), with config/examples-on-limit.yaml as
 * written: the rejection's status, headers and body (RLS raw_body), exponential backoff, the daily JSON body,
 * degrade (the upstream receives the request headers), redirect over RateLimitService (429 with location), and
 * delay (Envoy holds each request until its slot, then the upstream gets it). The clock is the docs' 2026-11-23
 * 14:00:30 UTC, so the answers can be compared with the page's examples.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { rlsBootstrap, type RlsRoute } from '../support/envoy-bootstrap.js';
import { describeEnvoy } from '../support/envoy.js';
import { envoyRlsCounts, startEnvoyStack, warmUp, type EnvoyStack } from '../support/envoy-stack.js';
import { eventually } from '../support/eventually.js';
import { RlsTestClient } from '../support/rls-client.js';

const ROOT = join(import.meta.dirname, '../..');
const DOCS_TIME = Date.UTC(2026, 10, 23, 14, 0, 30);
/** One slot every 250 ms (of the service's fake clock, which the test moves), up to 1 s of delay. */
const SLOW_SHAPED = `
  - key: slow_shaped
    rate_limit: {unit: second, requests_per_unit: 4, algorithm: leaky_bucket, on_limit: {action: delay, max_delay: 1s}}
`;
/**
 * docs/on-limit.md: Envoy's filter timeout at least max_delay plus the decision time and margin. The service
 * holds a request only while its slot fits in the gRPC deadline as it arrives (real time): 2.5 s leaves 1.5 s
 * for a loaded CI machine to get the call to the service (with 2 s for a 2 s max_delay, a call that arrived
 * 400 ms late was rejected instead of held).
 */
const FILTER_TIMEOUT = '2.5s';

const KEYS = ['backoff_client', 'fixed_client', 'daily_client', 'shaped_client', 'search_client', 'signup_client', 'slow_shaped'];
const routes: RlsRoute[] = [
  // /bulk/<key>: the descriptor counts x-cost hits (Envoy's hits_addend with a format string; read from the
  // per-route filter config only)
  ...KEYS.map((key) => ({
    prefix: `/bulk/${key}`,
    perRoute: true,
    rateLimits: [{ actions: [{ request_headers: { header_name: 'x-client', descriptor_key: key } }], hits_addend: { format: '%REQ(x-cost)%' } }],
  })),
  ...KEYS.map((key) => ({ prefix: `/${key}`, rateLimits: [{ actions: [{ request_headers: { header_name: 'x-client', descriptor_key: key } }] }] })),
  { prefix: '/warm', rateLimits: [{ actions: [{ generic_key: { descriptor_key: 'no_rule', descriptor_value: 'x' } }] }] },
];

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The response as the docs print it: the headers this feature is about (Envoy's own date/server etc. left out). */
const SHOWN = ['retry-after', 'ratelimit-policy', 'ratelimit', 'content-type', 'x-limit-reason', 'location', 'x-envoy-ratelimited'];

describeEnvoy('on_limit through Envoy (config/examples-on-limit.yaml)', () => {
  let stack: EnvoyStack;
  beforeAll(async () => {
    stack = await startEnvoyStack({
      backend: 'memory',
      rules: { 'examples.yaml': readFileSync(join(ROOT, 'config/examples-on-limit.yaml'), 'utf8') + SLOW_SHAPED },
      config: ({ service, upstream }) => rlsBootstrap({ service, upstream, domain: 'examples', routes, filter: { timeout: FILTER_TIMEOUT } }),
    });
    await warmUp(stack, 'app', () => fetch(`${stack.url}/warm`));
    stack.service.clock.set(DOCS_TIME);
  });
  afterAll(async () => {
    await stack?.close();
  });

  async function send(path: string, client: string, extra: Record<string, string> = {}): Promise<Answer> {
    const res = await fetch(`${stack.url}${path}`, { headers: { 'x-client': client, ...extra } });
    const headers: Record<string, string> = {};
    for (const name of SHOWN) {
      const value = res.headers.get(name);
      if (value !== null) headers[name] = value;
    }
    return { status: res.status, headers, body: await res.text() };
  }
  async function sendMany(path: string, client: string, n: number): Promise<Answer[]> {
    const out: Answer[] = [];
    for (let i = 0; i < n; i++) out.push(await send(path, client));
    return out;
  }

  it('exponential backoff: each consecutive rejection doubles retry-after, in the JSON body too', async () => {
    const answers = await sendMany('/backoff_client', 'carol', 9);
    expect(answers.slice(0, 5).map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(answers.slice(5).map((a) => [a.status, a.headers['retry-after'], a.body])).toEqual(
      [1, 2, 4, 8].map((t) => [429, String(t), `{"error":"too many requests","retry_after":${t}}`]),
    );
    expect(answers[8]?.headers).toEqual({
      'retry-after': '8',
      'ratelimit-policy': '"examples.backoff_client";q=5;w=1',
      ratelimit: '"examples.backoff_client";r=0;t=8',
      'content-type': 'application/json',
      'x-envoy-ratelimited': 'true',
    });
  });

  it('fixed retry: the 101st request at 30 s into the minute gets the text body of the docs', async () => {
    // 95 hits by a direct call on the same descriptor, 5 through Envoy, then the 101st
    const rls = new RlsTestClient(stack.service.grpcAddress);
    try {
      expect((await rls.ask('examples', [[['fixed_client', 'bob']]], 95)).overall_code).toBe('OK');
    } finally {
      rls.close();
    }
    const answers = await sendMany('/fixed_client', 'bob', 6);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 429]);
    expect(answers[5]).toEqual({
      status: 429,
      headers: {
        'retry-after': '30',
        'ratelimit-policy': '"examples.fixed_client";q=100;w=60',
        ratelimit: '"examples.fixed_client";r=0;t=30',
        'content-type': 'text/plain; charset=utf-8',
        'x-envoy-ratelimited': 'true',
      },
      body: 'Too many requests: 100 per 60 s for fixed_client=bob. Retry in 30 s.\n',
    });
  });

  it('daily limit: 1000 hits in one request (hits_addend from x-cost), then the JSON body with reset_at and x-limit-reason', async () => {
    const bulk = await send('/bulk/daily_client', 'dora', { 'x-cost': '1000' });
    expect(bulk.status).toBe(200);
    expect(bulk.headers['ratelimit']).toBe('"daily";r=0;t=35970');
    const over = await send('/daily_client', 'dora');
    expect(over).toEqual({
      status: 429,
      headers: {
        'retry-after': '35970',
        'ratelimit-policy': '"daily";q=1000;w=86400',
        ratelimit: '"daily";r=0;t=35970',
        'content-type': 'application/json',
        'x-limit-reason': 'daily',
        'x-envoy-ratelimited': 'true',
      },
      body: '{"error":"daily limit reached","limit":1000,"reset_at":"2026-11-24T00:00:00Z","retry_after":35970}',
    });
  });

  it('degrade: over the limit the request still reaches the upstream, with x-degraded: true', async () => {
    const bulk = await send('/bulk/search_client', 'erin', { 'x-cost': '600' });
    expect(bulk.status).toBe(200);
    const before = stack.upstream.requests.length;
    const degraded = await send('/search_client', 'erin');
    expect(degraded.status).toBe(200);
    expect(degraded.headers['ratelimit-policy']).toBe('"examples.search_client";q=600;w=60');
    expect(degraded.headers['ratelimit']).toBe('"examples.search_client";r=0;t=30');
    const seen = stack.upstream.requests.slice(before);
    expect(seen.map((r) => [r.url, r.headers['x-client'], r.headers['x-degraded']])).toEqual([['/search_client', 'erin', 'true']]);
    expect(stack.upstream.requests[before - 1]?.headers['x-degraded']).toBeUndefined();
  });

  it('redirect over RateLimitService: a 429 carrying location', async () => {
    const answers = await sendMany('/signup_client', 'frank', 4);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429]);
    expect(answers[3]?.headers).toEqual({
      'retry-after': '3570',
      'ratelimit-policy': '"examples.signup_client";q=3;w=3600',
      ratelimit: '"examples.signup_client";r=0;t=3570',
      location: 'https://example.com/slow-down?client=signup_client%3Dfrank',
      'x-envoy-ratelimited': 'true',
    });
  });

  it('delay: Envoy holds each request until its slot comes, then the upstream gets it; beyond max_delay, 429 at once', async () => {
    const path = (i: number): string => `/slow_shaped?i=${i}`;
    const atUpstream = (): string[] => stack.upstream.requests.filter((r) => r.url.startsWith('/slow_shaped')).map((r) => r.url);
    const heldCalls = async (): Promise<number> =>
      (await stack.envoy.stats('^cluster\\.ratelimit\\.upstream_rq_active$')).get('cluster.ratelimit.upstream_rq_active') ?? 0;
    const errorsBefore = (await envoyRlsCounts(stack.envoy, 'app')).error;
    // slots at +0, +250, +500, +750, +1000 ms of the service's clock; the request sent after them would wait 1.25 s
    const answers: Promise<Answer>[] = [];
    for (let i = 0; i < 5; i++) {
      answers.push(send(path(i), 'gus'));
      await eventually(async () => atUpstream().length === 1 && (await heldCalls()) === i, { what: `request ${i} held`, timeoutMs: 10_000 });
    }
    expect(await send(path(5), 'gus')).toMatchObject({ status: 429, headers: { 'retry-after': '2', 'x-envoy-ratelimited': 'true' } });
    for (let i = 1; i < 5; i++) {
      stack.service.timer.advance(250);
      await eventually(() => atUpstream().length === i + 1, { what: `request ${i} at the upstream`, timeoutMs: 10_000 });
    }
    expect(atUpstream()).toEqual([0, 1, 2, 3, 4].map(path));
    expect((await Promise.all(answers)).map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect((await envoyRlsCounts(stack.envoy, 'app')).error).toBe(errorsBefore);
  });
});

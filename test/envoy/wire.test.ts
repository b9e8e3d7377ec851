/**
 * What Envoy 1.40 really puts on the wire to the rate-limit service (docs/envoy.md, "What Envoy sends"), seen
 * by a recording hop between Envoy and the real service: the call's headers and deadline, where `hits_addend`
 * is honoured (RateLimitPerRoute, not route.rate_limits), and `apply_on_stream_done`: such a descriptor is not
 * sent at request time at all, only in a second call after the upstream's response, with a cost that may come
 * from the response; Envoy ignores that call's answer.
 */
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { rlsBootstrap } from '../support/envoy-bootstrap.js';
import { describeEnvoy } from '../support/envoy.js';
import type { RecordedCall } from '../support/envoy-recorder.js';
import { envoyRlsCounts, startEnvoyStack, warmUp, type EnvoyStack } from '../support/envoy-stack.js';
import { eventually } from '../support/eventually.js';

const RULES = `domain: wire
descriptors:
  - key: step
    rate_limit: {unit: minute, requests_per_unit: 1000}
`;
const step = (value: string) => ({ generic_key: { descriptor_key: 'step', descriptor_value: value } });
/** The upstream answers after 200 ms with the request's price in x-cost. */
const UPSTREAM_DELAY_MS = 200;

describeEnvoy('what Envoy 1.40 sends to the rate-limit service', () => {
  let stack: EnvoyStack;
  let calls: RecordedCall[];
  beforeAll(async () => {
    stack = await startEnvoyStack({
      backend: 'memory',
      record: true,
      rules: { 'wire.yaml': RULES },
      upstream: (_req, res) => {
        setTimeout(() => {
          res.writeHead(200, { 'x-cost': '9' });
          res.end('done');
        }, UPSTREAM_DELAY_MS);
      },
      config: ({ service, upstream }) =>
        rlsBootstrap({
          service,
          upstream,
          domain: 'wire',
          routes: [
            { prefix: '/route-hits', rateLimits: [{ actions: [step('route-hits')], hits_addend: { number: 5 } }] },
            {
              prefix: '/per-route-hits',
              perRoute: true,
              rateLimits: [
                { actions: [step('number')], hits_addend: { number: 5 } },
                { actions: [step('format')], hits_addend: { format: '%REQ(x-cost)%' } },
              ],
            },
            { prefix: '/stream-done', rateLimits: [{ actions: [step('now')] }, { actions: [step('at-end')], apply_on_stream_done: true }] },
            {
              // check at request time (0 hits), count the price the upstream reports once the response is done
              prefix: '/priced',
              perRoute: true,
              rateLimits: [
                { actions: [step('priced')], hits_addend: { number: 0 } },
                { actions: [step('priced')], hits_addend: { format: '%RESP(x-cost)%' }, apply_on_stream_done: true },
              ],
            },
          ],
        }),
    });
    calls = stack.recorder?.calls ?? [];
    await warmUp(stack, 'app', () => fetch(`${stack.url}/route-hits`));
  });
  afterAll(async () => {
    await stack?.close();
  });
  beforeEach(() => {
    calls.length = 0;
  });

  const rls = (): RecordedCall[] => calls.filter((c) => c.request !== undefined);
  const descriptors = (c: RecordedCall | undefined) =>
    c?.request?.descriptors.map((d) => ({ entries: d.entries.map((e) => `${e.key}=${e.value}`).join(','), hits: d.hitsAddend }));

  it("one call per request: Envoy's headers, the filter timeout as grpc-timeout, request-level hits_addend 0", async () => {
    await (await fetch(`${stack.url}/route-hits`)).text();
    expect(rls()).toHaveLength(1);
    expect(rls()[0]?.headers).toMatchObject({
      ':method': 'POST',
      ':path': '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
      ':authority': 'ratelimit',
      te: 'trailers',
      'content-type': 'application/grpc',
      'grpc-timeout': '2000m',
    });
    expect(rls()[0]?.request).toMatchObject({ domain: 'wire', hitsAddend: 0 });
  });

  it('hits_addend in route.rate_limits is accepted and not sent; in RateLimitPerRoute a number or a format is, and a format without a number drops the descriptor', async () => {
    await (await fetch(`${stack.url}/route-hits`)).text();
    await (await fetch(`${stack.url}/per-route-hits`, { headers: { 'x-cost': '7' } })).text();
    await (await fetch(`${stack.url}/per-route-hits`)).text();
    await (await fetch(`${stack.url}/per-route-hits`, { headers: { 'x-cost': 'lots' } })).text();
    expect(rls().map(descriptors)).toEqual([
      [{ entries: 'step=route-hits', hits: undefined }],
      [
        { entries: 'step=number', hits: 5 },
        { entries: 'step=format', hits: 7 },
      ],
      // the format's header absent or not a number: Envoy drops that whole descriptor (its limit is not asked)
      [{ entries: 'step=number', hits: 5 }],
      [{ entries: 'step=number', hits: 5 }],
    ]);
  });

  it('apply_on_stream_done: not sent at request time; a second call after the response, its answer ignored', async () => {
    const okBefore = (await envoyRlsCounts(stack.envoy, 'app')).ok;
    const sent = Date.now();
    const res = await fetch(`${stack.url}/stream-done`);
    await res.text();
    const answered = Date.now();
    await eventually(() => rls().length === 2, { what: 'the stream-done call' });
    const [first, second] = rls();
    expect([descriptors(first), descriptors(second)]).toEqual([[{ entries: 'step=now', hits: undefined }], [{ entries: 'step=at-end', hits: undefined }]]);
    expect(first?.atMs).toBeLessThan(sent + UPSTREAM_DELAY_MS);
    expect(second?.atMs).toBeGreaterThanOrEqual(sent + UPSTREAM_DELAY_MS);
    expect(answered - sent).toBeGreaterThanOrEqual(UPSTREAM_DELAY_MS);
    // Envoy's ok counter moved for the request-time call only
    expect((await envoyRlsCounts(stack.envoy, 'app')).ok - okBefore).toBe(1);
  });

  it('the priced pattern: a check (hits 0) at request time, the price from the response header at stream end', async () => {
    await (await fetch(`${stack.url}/priced`)).text();
    await eventually(() => rls().length === 2, { what: 'the stream-done call' });
    expect(rls().map(descriptors)).toEqual([[{ entries: 'step=priced', hits: 0 }], [{ entries: 'step=priced', hits: 9 }]]);
  });
});

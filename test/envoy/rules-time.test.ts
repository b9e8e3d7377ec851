/**
 * Rules in time as a client of a real Envoy sees them (service on a fake clock, memory and Redis): a calendar
 * month quota in Europe/Berlin answers 429 with retry-after and RateLimit headers giving the seconds to the next
 * local month start, and admits again from it; a temporary raise (valid_until) admits at its own limit until
 * its end, then the base rule decides, with no reload.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { rlsBootstrap, type RlsRoute } from '../support/envoy-bootstrap.js';
import { describeEnvoy } from '../support/envoy.js';
import { envoyRlsCounts, startEnvoyStack, warmUp, type Backend, type EnvoyStack } from '../support/envoy-stack.js';

/** 23:30 in Berlin on 31 January 2026: the month ends in 30 minutes (00:00 CET on 1 February = 23:00 UTC). */
const JAN_31_LATE = Date.parse('2026-01-31T22:30:00Z');
const RAISE_ENDS = '2026-02-01T00:00:00Z';

const RULES = `domain: quota
descriptors:
  - key: api_key
    rate_limit: {name: monthly, calendar: month, time_zone: Europe/Berlin, requests_per_unit: 3}
  - key: tenant
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: tenant
    value: launch
    valid_until: ${RAISE_ENDS}
    rate_limit: {unit: minute, requests_per_unit: 5}
`;

const routes: RlsRoute[] = [
  { prefix: '/monthly', rateLimits: [{ actions: [{ request_headers: { header_name: 'x-api-key', descriptor_key: 'api_key' } }] }] },
  { prefix: '/tenant', rateLimits: [{ actions: [{ request_headers: { header_name: 'x-tenant', descriptor_key: 'tenant' } }] }] },
  { prefix: '/warm', rateLimits: [{ actions: [{ generic_key: { descriptor_key: 'no_rule', descriptor_value: 'x' } }] }] },
];

interface Answer {
  status: number;
  retryAfter: string | null;
  policy: string | null;
  state: string | null;
}

for (const backend of ['memory', 'redis'] as Backend[]) {
  describeEnvoy(`rules in time through Envoy (${backend})`, () => {
    let stack: EnvoyStack;
    beforeAll(async () => {
      stack = await startEnvoyStack({
        backend,
        rules: { 'quota.yaml': RULES },
        config: ({ service, upstream }) => rlsBootstrap({ service, upstream, domain: 'quota', routes }),
      });
      await warmUp(stack, 'app', () => fetch(`${stack.url}/warm`));
    });
    afterAll(async () => {
      await stack?.close();
    });

    async function send(path: string, headers: Record<string, string>): Promise<Answer> {
      const res = await fetch(`${stack.url}${path}`, { headers });
      await res.arrayBuffer();
      return {
        status: res.status,
        retryAfter: res.headers.get('retry-after'),
        policy: res.headers.get('ratelimit-policy'),
        state: res.headers.get('ratelimit'),
      };
    }

    it('a calendar month quota: 429 with the seconds to the next local month start, then admitted again from it', async () => {
      stack.service.clock.set(JAN_31_LATE);
      const before = await envoyRlsCounts(stack.envoy, 'app');
      const answers = [];
      for (let i = 0; i < 4; i++) answers.push(await send('/monthly', { 'x-api-key': 'k1' }));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429]);
      expect(answers[2]!.state).toBe('"monthly";r=0;t=1800');
      // w= is the current calendar window's length: January, 31 days.
      expect(answers[3]).toMatchObject({ retryAfter: '1800', policy: `"monthly";q=3;w=${31 * 86400}`, state: '"monthly";r=0;t=1800' });
      expect((await envoyRlsCounts(stack.envoy, 'app')).overLimit - before.overLimit).toBe(1);
      // One second before the boundary: still January in Berlin, still over.
      stack.service.clock.set(Date.parse('2026-01-31T22:59:59Z'));
      expect(await send('/monthly', { 'x-api-key': 'k1' })).toMatchObject({ status: 429, retryAfter: '1' });
      // 00:00 CET on 1 February: a new window, reset at 00:00 CET on 1 March (28 days).
      stack.service.clock.set(Date.parse('2026-01-31T23:00:00Z'));
      expect(await send('/monthly', { 'x-api-key': 'k1' })).toMatchObject({
        status: 200,
        policy: `"monthly";q=3;w=${28 * 86400}`,
        state: `"monthly";r=2;t=${28 * 86400}`,
      });
    });

    it('a raise with valid_until admits at its limit until its end, then the base rule decides, with no reload', async () => {
      stack.service.clock.set(Date.parse(RAISE_ENDS) - 120_000);
      const during = [];
      for (let i = 0; i < 6; i++) during.push(await send('/tenant', { 'x-tenant': 'launch' }));
      expect(during.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 429]);
      expect(during[0]!.policy).toBe('"quota.tenant_launch";q=5;w=60');
      stack.service.clock.set(Date.parse(RAISE_ENDS));
      const after = [];
      for (let i = 0; i < 3; i++) after.push(await send('/tenant', { 'x-tenant': 'launch' }));
      expect(after.map((a) => a.status)).toEqual([200, 200, 429]);
      expect(after[0]!.policy).toBe('"quota.tenant";q=2;w=60');
      expect(after[2]).toMatchObject({ retryAfter: '60', state: '"quota.tenant";r=0;t=60' });
    });
  });
}

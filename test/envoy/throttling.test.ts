/**
 * The throttling features as a client of a real Envoy sees them (docs/throttling.md): soft limits and their
 * headers, soft-limit warnings, elastic borrowing, bans (retry-after = what is left of the ban), criticality
 * shares from a request header, shadow mode (never a 429). One Envoy and one service (fake clock) per store
 * (memory, Redis); each test moves the clock an hour and a half on, so every window and ban starts afresh.
 */
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { rlsBootstrap } from '../support/envoy-bootstrap.js';
import { describeEnvoy } from '../support/envoy.js';
import { envoyRlsCounts, serviceRlsCounts, startEnvoyStack, warmUp, type Backend, type EnvoyStack } from '../support/envoy-stack.js';
import { scrapeMetrics, total } from '../support/scrape.js';

const RULES = `domain: features
descriptors:
  - key: soft
    rate_limit: {unit: minute, requests_per_unit: 10, throttling: {soft: 20%}}
  - key: warn
    rate_limit: {unit: minute, requests_per_unit: 10, soft_requests_per_unit: 8}
  - key: tenant
    rate_limit: {unit: minute, requests_per_unit: 4, throttling: {elastic: {capacity: 10, max: 6}}}
  - key: ban
    rate_limit: {unit: minute, requests_per_unit: 3, ban: 1h}
  - key: crit
    rate_limit: {unit: minute, requests_per_unit: 10, shares: {critical: 100%, default: 80%, sheddable: 50%}}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 2}
`;

/** `/<key>/...` → descriptor (<key>=<x-client header>) */
const byClient = (key: string) => ({ prefix: `/${key}/`, rateLimits: [{ actions: [{ request_headers: { header_name: 'x-client', descriptor_key: key } }] }] });

interface Seen {
  status: number;
  headers: Headers;
}

for (const backend of ['memory', 'redis'] as Backend[])
  describeEnvoy(`throttling features through Envoy (${backend})`, () => {
    let stack: EnvoyStack;
    beforeAll(async () => {
      stack = await startEnvoyStack({
        backend,
        rules: { 'features.yaml': RULES },
        config: ({ service, upstream }) =>
          rlsBootstrap({
            service,
            upstream,
            domain: 'features',
            routes: [
              ...['soft', 'warn', 'tenant', 'ban', 'shadow'].map(byClient),
              {
                prefix: '/crit/',
                rateLimits: [
                  {
                    actions: [
                      { generic_key: { descriptor_key: 'crit', descriptor_value: 'api' } },
                      { request_headers: { header_name: 'x-criticality', descriptor_key: 'criticality', skip_if_absent: true } },
                    ],
                  },
                ],
              },
            ],
          }),
      });
      await warmUp(stack, 'app', () => fetch(`${stack.url}/shadow/`, { headers: { 'x-client': 'warm-up' } }));
    });
    afterAll(async () => {
      await stack?.close();
    });
    beforeEach(() => {
      stack.service.timer.advance(5_400_000);
    });

    async function send(path: string, n: number, headers: Record<string, string> = {}): Promise<Seen[]> {
      const seen: Seen[] = [];
      for (let i = 0; i < n; i++) {
        const res = await fetch(`${stack.url}${path}`, { headers });
        await res.text();
        seen.push({ status: res.status, headers: res.headers });
      }
      return seen;
    }
    const statuses = (seen: Seen[]): number[] => seen.map((s) => s.status);
    const header = (seen: Seen[], name: string): (string | null)[] => seen.map((s) => s.headers.get(name));

    it('soft: 20 % over the limit is admitted and marked, then 429', async () => {
      const seen = await send('/soft/a', 13, { 'x-client': 'alice' });
      expect(statuses(seen)).toEqual([...Array<number>(12).fill(200), 429]);
      expect(header(seen, 'x-ratelimit-soft-exceeded')).toEqual([
        ...Array<null>(10).fill(null),
        '"features.soft";limit=10;over=1',
        '"features.soft";limit=10;over=2',
        null,
      ]);
      expect(header(seen, 'x-ratelimit-remaining').slice(9, 12)).toEqual(['0', '0', '0']);
      expect(seen[12]?.headers.get('x-envoy-ratelimited')).toBe('true');
    });

    it('soft warning: above soft_requests_per_unit the client is warned, the limit still holds', async () => {
      const seen = await send('/warn/a', 11, { 'x-client': 'bob' });
      expect(statuses(seen)).toEqual([...Array<number>(10).fill(200), 429]);
      expect(header(seen, 'x-ratelimit-soft-warning')).toEqual([
        ...Array<null>(8).fill(null),
        '"features.warn";soft=8;used=9',
        '"features.warn";soft=8;used=10',
        null,
      ]);
    });

    it('elastic: tenants borrow up to max while the rule as a whole stays within capacity', async () => {
      const a = await send('/tenant/a', 8, { 'x-client': 'a' });
      const b = await send('/tenant/b', 8, { 'x-client': 'b' });
      const c = await send('/tenant/c', 8, { 'x-client': 'c' });
      const admitted = (seen: Seen[]): number => seen.filter((s) => s.status === 200).length;
      expect([admitted(a), admitted(b), admitted(c)]).toEqual([6, 4, 4]);
      expect(header(a, 'x-ratelimit-elastic-borrowed').slice(3, 7)).toEqual([null, '"features.tenant";limit=4;max=6', '"features.tenant";limit=4;max=6', null]);
    });

    it('ban: the rejection starts a ban, retry-after is what is left of it, and it ends on time', async () => {
      const first = await send('/ban/x', 4, { 'x-client': '10.0.0.1' });
      expect(statuses(first)).toEqual([200, 200, 200, 429]);
      expect(first[3]?.headers.get('retry-after')).toBe('3600');
      expect(first[3]?.headers.get('x-ratelimit-banned')).toBe('"features.ban";t=3600');
      stack.service.timer.advance(120_000); // the window has rolled over; the ban has not
      const later = await send('/ban/x', 1, { 'x-client': '10.0.0.1' });
      expect(statuses(later)).toEqual([429]);
      expect(later[0]?.headers.get('retry-after')).toBe('3480');
      expect(later[0]?.headers.get('x-ratelimit-banned')).toBe('"features.ban";t=3480');
      stack.service.timer.advance(3_480_000);
      const after = await send('/ban/x', 1, { 'x-client': '10.0.0.1' });
      expect(statuses(after)).toEqual([200]);
      expect(after[0]?.headers.get('x-ratelimit-remaining')).toBe('2'); // banned requests counted nothing
    });

    it('criticality from a request header: sheddable, default, critical fill 50 %, 80 %, 100 % of the limit', async () => {
      const admitted = async (criticality: string | undefined): Promise<number> =>
        (await send('/crit/', 10, criticality ? { 'x-criticality': criticality } : {})).filter((s) => s.status === 200).length;
      expect([await admitted('sheddable'), await admitted(undefined), await admitted('critical')]).toEqual([5, 3, 2]);
    });

    it('shadow mode: over the limit is counted and reported, never a 429', async () => {
      const before = await scrapeMetrics(stack.service.httpBase.replace('http://', ''));
      const envoyBefore = await envoyRlsCounts(stack.envoy, 'app');
      const seen = await send('/shadow/', 5, { 'x-client': 'carol' });
      expect(statuses(seen)).toEqual([200, 200, 200, 200, 200]);
      expect(stack.upstream.requests.filter((r) => r.headers['x-client'] === 'carol')).toHaveLength(5);
      const after = await scrapeMetrics(stack.service.httpBase.replace('http://', ''));
      expect(total(after, 'ratelimit_shadow_mode_total') - total(before, 'ratelimit_shadow_mode_total')).toBe(3);
      // Envoy's filter has no shadow stats of its own (the RLS answer is OK): all five count as ok
      const envoyAfter = await envoyRlsCounts(stack.envoy, 'app');
      expect(envoyAfter.ok - envoyBefore.ok).toBe(5);
      const names = [...(await stack.envoy.stats('^cluster\\.app\\.ratelimit\\.')).keys()];
      expect(names.filter((n) => !/\.ratelimit\.(ok|over_limit|error|failure_mode_allowed)$/.test(n))).toEqual([]);
    });

    it("Envoy's counters agree with the service's decisions", async () => {
      const envoy = await envoyRlsCounts(stack.envoy, 'app');
      const service = await serviceRlsCounts(stack.service);
      expect({ ok: envoy.ok, overLimit: envoy.overLimit, error: envoy.error, failureModeAllowed: envoy.failureModeAllowed }).toEqual({
        ok: service.ok,
        overLimit: service.overLimit,
        error: 0,
        failureModeAllowed: 0,
      });
    });
  });

/**
 * Who is being limited, seen by an operator while a real Envoy limits clients: GET /top, `ratelimit top`, the
 * status page at / as a real headless Chromium renders it (a client's `<script>` value shows as text; a
 * screenshot is kept), and ratelimit_rule_limit, on the memory store and on a real Redis.
 */
import { existsSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runRatelimit } from '../support/ratelimit-cli.js';
import { freePort } from '../support/redis.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { rlsBootstrap } from '../support/envoy-bootstrap.js';
import { describeEnvoy } from '../support/envoy.js';
import { startEnvoyStack, warmUp, type Backend, type EnvoyStack } from '../support/envoy-stack.js';
import { describeChromium, dumpDom, screenshot } from '../support/chromium.js';
import type { TopSnapshot } from '../../src/top/top-keys.js';

const RULES = `domain: ops
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: tenant
    rate_limit: {unit: hour, requests_per_unit: 1000}
`;
const HOSTILE = '<script>alert(1)</script>';

for (const backend of ['memory', 'redis'] as Backend[]) {
  describeEnvoy(`who is being limited, through Envoy (${backend})`, () => {
    let stack: EnvoyStack;
    const sent = new Map<string, number[]>();
    beforeAll(async () => {
      stack = await startEnvoyStack({
        backend,
        rules: { 'ops.yaml': RULES },
        config: ({ service, upstream }) =>
          rlsBootstrap({
            service,
            upstream,
            domain: 'ops',
            routes: [{ prefix: '/', rateLimits: [{ actions: [{ request_headers: { header_name: 'x-user', descriptor_key: 'user' } }] }] }],
          }),
      });
      await warmUp(stack, 'app', () => fetch(`${stack.url}/`, { headers: { 'x-user': 'warm-up' } }));
      stack.service.timer.advance(3_600_000); // the warm-up's minute and its top slice are gone
      // alice: 10 requests (7 rejected), the hostile value 6 (3 rejected), bob 4 (1 rejected), carol 3 (the 3rd near the limit).
      for (const [user, n] of [
        ['alice', 10],
        [HOSTILE, 6],
        ['bob', 4],
        ['carol', 3],
      ] as const) {
        const statuses: number[] = [];
        for (let i = 0; i < n; i++) {
          const res = await fetch(`${stack.url}/`, { headers: { 'x-user': user } });
          await res.arrayBuffer();
          statuses.push(res.status);
        }
        sent.set(user, statuses);
      }
    });
    afterAll(async () => {
      await stack?.close();
    });

    it('the clients saw the limit (429 past 3 a minute)', () => {
      expect(sent.get('alice')!.filter((s) => s === 429)).toHaveLength(7);
      expect(sent.get(HOSTILE)!.filter((s) => s === 429)).toHaveLength(3);
      expect(sent.get('carol')).toEqual([200, 200, 200]);
    });

    it('GET /top ranks the rejected keys per rule, with counts and the deciding rule; near-limit keys beside them', async () => {
      const res = await fetch(`${stack.service.httpBase}/top?domain=ops`);
      expect(res.status).toBe(200);
      const top = (await res.json()) as TopSnapshot;
      expect(top.rules).toHaveLength(1);
      const rule = top.rules[0]!;
      expect(rule).toMatchObject({ domain: 'ops', rule: 'ops.user', source: expect.stringMatching(/ops\.yaml:3$/) as unknown });
      expect(rule.rejected).toEqual([
        { entries: [{ key: 'user', value: 'alice' }], count: 7, error: 0 },
        { entries: [{ key: 'user', value: HOSTILE }], count: 3, error: 0 },
        { entries: [{ key: 'user', value: 'bob' }], count: 1, error: 0 },
      ]);
      // The 3rd hit of each user used 3 of 3 (above NEAR_LIMIT_RATIO 0.8 of the limit) and was admitted.
      expect(rule.near_limit.map((k) => [k.entries[0]!.value, k.count]).sort()).toEqual([
        [HOSTILE, 1],
        ['alice', 1],
        ['bob', 1],
        ['carol', 1],
      ]);
      expect(((await (await fetch(`${stack.service.httpBase}/top?domain=other`)).json()) as TopSnapshot).rules).toEqual([]);
    });

    it('`ratelimit top --admin HOST:PORT --domain D` prints the same', async () => {
      const admin = stack.service.httpBase.replace('http://', '');
      const out = await runRatelimit(['top', '--admin', admin, '--domain', 'ops']);
      expect(out.stderr).toBe('');
      expect(out.code).toBe(0);
      expect(out.stdout).toMatch(/^ops ops\.user {2}\[.*ops\.yaml:3\]$/m);
      expect(out.stdout).toMatch(/^ {2}rejected {9}7 {2}user=alice$/m);
      expect(out.stdout).toMatch(/^ {2}near {13}1 {2}user=carol$/m);
      const closed = await freePort();
      const refused = await runRatelimit(['top', '--admin', `127.0.0.1:${closed}`]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`cannot read http://127.0.0.1:${closed}/top: nothing listens there`);
    });

    it('ratelimit_rule_limit carries each rule’s configured limit', async () => {
      const text = await (await fetch(`${stack.service.httpBase}/metrics`)).text();
      expect(text).toContain('ratelimit_rule_limit{domain="ops",key="ops.user",window="1m"} 3');
      expect(text).toContain('ratelimit_rule_limit{domain="ops",key="ops.tenant",window="1h"} 1000');
    });

    describeChromium('the status page in a real browser', () => {
      it('shows the rules with their source, the store, the last reload and the top keys; a client value stays text', async () => {
        const page = `${stack.service.httpBase}/`;
        const head = await fetch(page);
        expect(head.headers.get('content-type')).toBe('text/html; charset=utf-8');
        expect(head.headers.get('content-security-policy')).toContain("default-src 'none'");
        await head.text();
        const dom = await dumpDom(page);
        expect(dom).toContain('<meta http-equiv="refresh" content="10">');
        expect(dom).toContain(`${backend}: <span class="ok">healthy</span>`);
        expect(dom).toMatch(/<td>ops<\/td><td><code>ops\.user<\/code><\/td><td>3 \/ 1m fixed_window<\/td><td><\/td><td>[^<]*ops\.yaml:3<\/td>/);
        expect(dom).toMatch(/<td>rejected<\/td><td><code>user=alice<\/code><\/td><td>7<\/td>/);
        // The hostile value is text in the DOM the browser built: escaped, and no script element exists.
        expect(dom).toContain('<code>user=&lt;script&gt;alert(1)&lt;/script&gt;</code>');
        expect(dom).not.toMatch(/<script/i);
        expect(dom).toMatch(/last reload<\/td><td>[^<]+: <span class="ok">ok<\/span>/);
        const dir = mkdtempSync(join(tmpdir(), 'rl-status-page-'));
        const file = join(dir, `status-page-${backend}.png`);
        await screenshot(page, file);
        expect(existsSync(file) && statSync(file).size).toBeGreaterThan(10_000);
        process.stderr.write(`status page screenshot (${backend}): ${file}\n`);
      });
    });
  });
}

/**
 * Rules in time as an operator sees them on a running service (fake clock): the gauge of rules by validity and
 * GET /rules' in_force move when the clock passes valid_from / valid_until, without a reload; requests past
 * max_values are counted by rule and action; `ratelimit check --at` reads its notes at the given instant.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RlsTestClient } from '../support/rls-client.js';
import { scrapeMetrics } from '../support/scrape.js';
import { startTestService, type TestService } from '../support/service.js';

const START = Date.parse('2025-06-01T07:00:00Z');
const RULES = `domain: api
descriptors:
  - key: tenant
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: tenant
    value: partner-42
    valid_from: 2025-06-01T08:00:00Z
    valid_until: 2025-06-01T09:00:00Z
    rate_limit: {unit: minute, requests_per_unit: 1000}
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 5, max_values: 2, on_max_values: overflow}
  - key: device
    rate_limit: {unit: minute, requests_per_unit: 5, max_values: 1, on_max_values: reject}
  - key: plan
    value: monthly
    rate_limit: {name: monthly, calendar: month, time_zone: Europe/Berlin, requests_per_unit: 2}
`;

let t: TestService;
let client: RlsTestClient;
beforeAll(async () => {
  t = await startTestService({ 'api.yaml': RULES });
  t.clock.set(START);
  client = new RlsTestClient(t.grpcAddress);
});
afterAll(async () => {
  client?.close();
  await t?.close();
});

async function validity(): Promise<Record<string, number | undefined>> {
  const s = await scrapeMetrics(t.httpBase.replace('http://', ''));
  const get = (v: string) => s.get(`ratelimit_config_rules{domain="api",validity="${v}"}`);
  return { in_force: get('in_force'), not_yet: get('not_yet'), ended: get('ended') };
}

async function partnerInForce(): Promise<unknown> {
  const body = (await (await fetch(`${t.httpBase}/rules`)).json()) as {
    domains: { rules: { stats_key: string; value?: string; in_force?: boolean; valid_until?: string }[] }[];
  };
  return body.domains[0]!.rules.find((r) => r.valid_until !== undefined)?.in_force;
}

describe('rules by validity, at the service clock', () => {
  it('the gauge and /rules in_force follow the clock across valid_from and valid_until, with no reload', async () => {
    expect(await validity()).toEqual({ in_force: 4, not_yet: 1, ended: 0 });
    expect(await partnerInForce()).toBe(false);
    t.clock.set(Date.parse('2025-06-01T08:00:00Z'));
    expect(await validity()).toEqual({ in_force: 5, not_yet: 0, ended: 0 });
    expect(await partnerInForce()).toBe(true);
    t.clock.set(Date.parse('2025-06-01T09:00:00Z'));
    expect(await validity()).toEqual({ in_force: 4, not_yet: 0, ended: 1 });
    expect(await partnerInForce()).toBe(false);
    const s = await scrapeMetrics(t.httpBase.replace('http://', ''));
    expect(s.get('ratelimit_config_reloads_total{result="success"}')).toBe(0);
  });
});

describe('requests past max_values', () => {
  it('are counted by rule and action; the series exist at zero from start', async () => {
    t.clock.set(Date.parse('2025-06-02T10:00:00Z'));
    const before = await scrapeMetrics(t.httpBase.replace('http://', ''));
    const series = (key: string, action: string) => `ratelimit_max_values_past_bound_total{domain="api",key="${key}",action="${action}"}`;
    expect([series('api.user', 'overflow'), series('api.user', 'reject'), series('api.device', 'reject')].map((k) => before.get(k))).toEqual([0, 0, 0]);
    for (const u of ['a', 'b', 'c', 'd', 'c']) await client.ask('api', [[['user', u]]]);
    const devices = [];
    for (const d of ['x', 'y', 'z']) devices.push((await client.ask('api', [[['device', d]]])).overall_code);
    expect(devices).toEqual(['OK', 'OVER_LIMIT', 'OVER_LIMIT']);
    const after = await scrapeMetrics(t.httpBase.replace('http://', ''));
    expect(after.get(series('api.user', 'overflow'))).toBe(3);
    expect(after.get(series('api.device', 'reject'))).toBe(2);
    expect(after.get(series('api.tenant', 'overflow'))).toBeUndefined();
  });
});

describe('max_values in /top, on the status page and in ratelimit top', () => {
  it('show each bounded limit: values tracked in the window against the bound, and the requests past it', async () => {
    // the same window as the test above: user tracked 2 of 2 (3 past, to the overflow counter), device 1 of 1 (2 rejected)
    const top = (await (await fetch(`${t.httpBase}/top?domain=api`)).json()) as { max_values: unknown[] };
    expect(top.max_values).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ domain: 'api', rule: 'api.user', max_values: 2, on_max_values: 'overflow', tracked: 2, past_bound: 3 }),
        expect.objectContaining({ domain: 'api', rule: 'api.device', max_values: 1, on_max_values: 'reject', tracked: 1, past_bound: 2 }),
      ]),
    );
    const page = await (await fetch(`${t.httpBase}/`)).text();
    expect(page).toContain('Values per window (max_values)');
    expect(page).toMatch(/api <code>api\.device<\/code><\/td><td>1 of 1<\/td><td>reject<\/td><td>2<\/td>/);
    const cli = await new Promise<string>((resolve) =>
      execFile(process.execPath, [BIN, 'top', '--admin', t.httpBase.replace('http://', ''), '--domain', 'api'], { timeout: 20_000 }, (_err, stdout) =>
        resolve(stdout),
      ),
    );
    expect(cli).toContain('api api.user  max_values 2 (overflow)');
    expect(cli).toMatch(/2 value\(s\) tracked in the window from \S+; 3 request\(s\) past the bound/);
  });
});

const BIN = join(import.meta.dirname, '../../bin/ratelimit.mjs');

describe('ratelimit query on a calendar quota', () => {
  const query = (args: string[]) =>
    new Promise<{ code: number; stdout: string }>((resolve) =>
      execFile(
        process.execPath,
        [BIN, 'query', '--server', t.grpcAddress, '--admin', t.httpBase.replace('http://', ''), '--domain', 'api', 'plan=monthly', ...args],
        { timeout: 20_000 },
        (err, stdout) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout }),
      ),
    );

  it('--spend and the dry run tell the time to the local month start', async () => {
    t.clock.set(Date.parse('2025-06-30T20:00:00Z')); // 22:00 on 30 June in Berlin (CEST): 2 hours left
    const spent = await query(['--spend', '--hits', '2']);
    expect(spent.code).toBe(0);
    expect(spent.stdout).toContain('plan=monthly: OK, 2/month (monthly), remaining 0 after this request, reset in 7200s');
    expect(spent.stdout).toContain(`header ratelimit-policy: "monthly";q=2;w=${30 * 86400}`);
    const dry = await query([]);
    expect(dry.code).toBe(3);
    expect(dry.stdout).toMatch(/^dry run, nothing counted .*would be REJECTED\n/);
    expect(dry.stdout).toContain('reset in 7200s');
  });
});

describe('ratelimit check --at', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-check-at-'));
  writeFileSync(join(dir, 'api.yaml'), RULES);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const run = (args: string[]) =>
    new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(process.execPath, [BIN, 'check', dir, ...args], { timeout: 20_000 }, (err, _out, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stderr }),
      ),
    );

  it('reads its notes at the given instant', async () => {
    const during = await run(['--at', '2025-06-01T08:30:00Z']);
    expect(during.code).toBe(0);
    expect(during.stderr).toMatch(/note: api\.yaml:\d+: rule 'api\.tenant_partner-42' ends in 30 minutes, at 2025-06-01T09:00:00\.000Z \(valid_until\)/);
    const after = await run(['--at', '2025-06-02T00:00:00Z']);
    expect(after.stderr).toMatch(/note: api\.yaml:\d+: rule 'api\.tenant_partner-42' ended at 2025-06-01T09:00:00\.000Z \(valid_until\) and decides nothing/);
    const bad = await run(['--at', 'tomorrow']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^check: --at takes an RFC 3339 time such as 2025-06-01T08:00:00Z, not 'tomorrow'/);
  });
});

describe('max_values across a reload', () => {
  const overflowed = async () =>
    (await scrapeMetrics(t.httpBase.replace('http://', ''))).get('ratelimit_max_values_past_bound_total{domain="api",key="api.user",action="overflow"}');

  it('an unchanged rule keeps its tracked values mid-window; a changed bound starts afresh', async () => {
    t.clock.set(Date.parse('2025-06-03T10:00:00Z'));
    for (const u of ['a', 'b']) await client.ask('api', [[['user', u]]]);
    const base = (await overflowed())!;
    await client.ask('api', [[['user', 'c']]]);
    expect(await overflowed()).toBe(base + 1);

    // Another file changes the rule set; the bounded rule is as it was: c, d still go to the overflow counter.
    writeFileSync(join(t.dir, 'other.yaml'), 'domain: other\ndescriptors:\n  - key: k\n    value: v\n    rate_limit: {unit: minute, requests_per_unit: 1}\n');
    expect((await t.service.rules.reload()).ok).toBe(true);
    t.clock.advance(1000);
    for (const u of ['c', 'd']) await client.ask('api', [[['user', u]]]);
    expect(await overflowed()).toBe(base + 3);
    expect((await client.ask('api', [[['user', 'a']]])).statuses[0]!.limit_remaining).toBe(3);

    // A new bound is a new guard: the first 3 values of the window count on their own again.
    writeFileSync(join(t.dir, 'api.yaml'), RULES.replace('max_values: 2, on_max_values: overflow', 'max_values: 3, on_max_values: overflow'));
    expect((await t.service.rules.reload()).ok).toBe(true);
    for (const u of ['e', 'f', 'g']) await client.ask('api', [[['user', u]]]);
    expect(await overflowed()).toBe(base + 3);
    await client.ask('api', [[['user', 'h']]]);
    expect(await overflowed()).toBe(base + 4);
  });
});

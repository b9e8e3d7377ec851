/**
 * Label values of /metrics come from the rules, never from requests. Over the real gRPC
 * socket and the real /metrics endpoint, as production runs (settings → app/start-service.ts → metrics.ts).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RlsTestClient } from '../support/rls-client.js';
import { startTestService, type TestService } from '../support/service.js';

const RULES = `
domain: web
descriptors:
  - key: api_key
    rate_limit: {unit: minute, requests_per_unit: 1000}
  - key: user
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 1000}
  - key: internal
    rate_limit: {unlimited: true}
`;

let t: TestService;
let client: RlsTestClient;

beforeAll(async () => {
  t = await startTestService({ 'web.yaml': RULES }, { metricsMaxDetailedSeries: 5, maxKeyBytes: 4096 });
  client = new RlsTestClient(t.grpcAddress);
});
afterAll(async () => {
  client.close();
  await t.close();
});

const scrape = async () => (await fetch(`${t.httpBase}/metrics`)).text();
/** The sample lines (no comments) of the series with this name. */
const series = (text: string, name: string) => text.split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));

describe('/metrics series are bounded by the rules', () => {
  it('has every configured series at zero from the start, and build and rules information', async () => {
    const text = await scrape();
    expect(text).toContain('ratelimit_decisions_total{domain="web",code="OK"} 0');
    expect(text).toContain('ratelimit_decisions_total{domain="web",code="OVER_LIMIT"} 0');
    expect(text).toContain('ratelimit_decisions_total{domain="unknown",code="OK"} 0');
    for (const name of ['hits', 'over_limit', 'near_limit', 'within_limit', 'shadow_mode', 'quota_mode']) {
      expect(text).toContain(`ratelimit_${name}_total{domain="web",key="web.api_key"} 0`);
      expect(text).toContain(`ratelimit_${name}_total{domain="web",key="web.user"} 0`);
    }
    expect(text).not.toContain('key="web.internal"'); // unlimited: never counted, no series
    expect(text).toContain('ratelimit_config_reloads_total{result="failure"} 0');
    expect(text).toContain('ratelimit_grpc_errors_total{code="INVALID_ARGUMENT"} 0');
    expect(text).toContain('ratelimit_store_fallbacks_total{mode="open"} 0');
    expect(text).toMatch(/^ratelimit_build_info\{version="\d+\.\d+\.\d+[^"]*",node_version="v\d+[^"]*"\} 1$/m);
    const rules = (await (await fetch(`${t.httpBase}/rules`)).json()) as { version: string };
    expect(text).toContain(`ratelimit_config_version_info{version="${rules.version}"} 1`);
    expect(text).toContain(`ratelimit_config_last_reload_timestamp_seconds ${t.clock.nowMs() / 1000}`);
  });

  it('counts 200 random domains as the one domain `unknown`', async () => {
    const before = series(await scrape(), 'ratelimit_decisions_total').length;
    for (let i = 0; i < 200; i++) await client.ask(`random-${i}-${'x'.repeat(i % 7)}`, [[['api_key', 'k']]]);
    await client.ask('d'.repeat(3000), [[['api_key', 'k']]]);
    const text = await scrape();
    const decisions = series(text, 'ratelimit_decisions_total');
    expect(decisions.length).toBe(before);
    expect(decisions).toContain('ratelimit_decisions_total{domain="unknown",code="OK"} 201');
    expect(text).not.toContain('random-');
    expect(Math.max(...text.split('\n').map((l) => l.length))).toBeLessThan(300);
  });

  it('keeps at most METRICS_MAX_DETAILED_SERIES request-derived keys per domain, then folds into `other`', async () => {
    for (let i = 0; i < 50; i++) await client.ask('web', [[['user', `u${i}-${'v'.repeat(100)}`]]], 1);
    const text = await scrape();
    const hits = series(text, 'ratelimit_hits_total').filter((l) => l.includes('domain="web"'));
    // web.api_key + web.user (configured) + 5 detailed keys + other
    expect(hits.length).toBe(2 + 5 + 1);
    expect(hits).toContain('ratelimit_hits_total{domain="web",key="other"} 45');
    expect(text).toContain('ratelimit_detailed_series_folded_total{domain="web"} 45');
    expect(hits.filter((l) => l.includes('key="web.user_u')).length).toBe(5);
  });

  it('folds request-level limit overrides (stats keys from request values) under the same cap', async () => {
    const before = Number(/ratelimit_detailed_series_folded_total\{domain="web"\} (\d+)/.exec(await scrape())![1]);
    for (let i = 0; i < 3; i++) {
      await client.shouldRateLimit({
        domain: 'web',
        descriptors: [{ entries: [{ key: 'api_key', value: `override-${i}` }], limit: { requests_per_unit: 9, unit: 'MINUTE' } }],
      });
    }
    const text = await scrape();
    expect(text).not.toContain('override-');
    expect(text).toContain(`ratelimit_detailed_series_folded_total{domain="web"} ${before + 3}`);
  });

  it('pre-creates the series of a new domain on reload and drops those of a removed one', async () => {
    writeFileSync(join(t.dir, 'web.yaml'), RULES.replace('domain: web', 'domain: shop'));
    const status = await t.service.rules.reload();
    expect(status.ok).toBe(true);
    const text = await scrape();
    expect(text).toContain('ratelimit_hits_total{domain="shop",key="shop.api_key"} 0');
    expect(text).toContain('ratelimit_decisions_total{domain="shop",code="OK"} 0');
    expect(text).not.toContain('domain="web"');
    expect(text).toContain(`ratelimit_config_version_info{version="${status.version}"} 1`);
    expect(series(text, 'ratelimit_config_version_info').length).toBe(1);
    // A request for the old domain is now unknown.
    await client.ask('web', [[['api_key', 'k']]]);
    expect(await scrape()).not.toContain('domain="web"');
  });
});

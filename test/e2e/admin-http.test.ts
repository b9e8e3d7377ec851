/** The HTTP admin server over a real socket: health, readiness, rules, metrics and POST /json (JSON_API=on: it consumes, like envoyproxy/ratelimit's). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.js';

const RULES = `
domain: web
descriptors:
  - key: api_key
    rate_limit: {unit: minute, requests_per_unit: 2, name: per-key}
  - key: ignored
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 2, quota_mode: true}
`;

let t: TestService;
beforeAll(async () => {
  t = await startTestService({ 'web.yaml': RULES }, { jsonApi: 'on' });
});
afterAll(async () => {
  await t.close();
});

async function post(body: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${t.httpBase}/json`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('admin HTTP', () => {
  it('serves /healthz and /readyz', async () => {
    expect((await fetch(`${t.httpBase}/healthz`)).status).toBe(200);
    expect((await fetch(`${t.httpBase}/readyz`)).status).toBe(200);
  });

  it('describes the loaded rules at /rules', async () => {
    const res = await fetch(`${t.httpBase}/rules`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { version: string; files: string[]; lastReload: { ok: boolean; warnings: string[] } };
    expect(body.files).toEqual(['web.yaml']);
    expect(body.version).toMatch(/^[0-9a-f]{16,}$/);
    expect(body.lastReload.ok).toBe(true);
    expect(body.lastReload.warnings).toEqual([
      "web.yaml:8:54: descriptors[1].rate_limit.quota_mode: 'quota_mode' has no effect here and is ignored, as envoyproxy/ratelimit ignores it ('quota_mode' belongs in a descriptor)",
    ]);
    expect(JSON.stringify(body)).toContain('per-key');
  });

  it('POST /json answers 200, then 429 over the limit, in proto3 JSON', async () => {
    const req = JSON.stringify({ domain: 'web', descriptors: [{ entries: [{ key: 'api_key', value: 'k1' }] }] });
    const first = await post(req);
    expect(first.status).toBe(200);
    expect(first.json).toMatchObject({
      overallCode: 'OK',
      statuses: [{ code: 'OK', currentLimit: { name: 'per-key', requestsPerUnit: 2, unit: 'MINUTE' }, limitRemaining: 1 }],
    });
    expect((first.json.statuses as { durationUntilReset: string }[])[0]!.durationUntilReset).toMatch(/^\d+s$/);
    expect((await post(req)).status).toBe(200);
    const third = await post(req);
    expect(third.status).toBe(429);
    expect(third.json.overallCode).toBe('OVER_LIMIT');
    // snake_case names are accepted too
    const snake = await post(JSON.stringify({ domain: 'web', descriptors: [{ entries: [{ key: 'api_key', value: 'k2' }] }], hits_addend: 2 }));
    expect(snake.json).toMatchObject({ statuses: [{ limitRemaining: 0 }] });
  });

  it('POST /json answers 400 with a message for bad input', async () => {
    expect(await post('{not json')).toMatchObject({ status: 400, json: { error: expect.stringContaining('body is not JSON') as unknown } });
    expect(await post('[]')).toMatchObject({ status: 400, json: { error: 'body must be a JSON object' } });
    expect(await post('{"domain":"web"}')).toMatchObject({ status: 400, json: { error: 'rate limit descriptor list must not be empty' } });
    expect(await post('{"domain":"","descriptors":[{"entries":[]}]}')).toMatchObject({ status: 400, json: { error: 'rate limit domain must not be empty' } });
    expect(await post('{"domain":"web","descriptors":[{"entries":[{"key":1}]}]}')).toMatchObject({
      status: 400,
      json: { error: 'descriptors[0].entries[0].key: expected a string' },
    });
    // The error shows the value as sent.
    expect(await post('{"domain":"web","descriptors":[{"entries":[]}],"hitsAddend":-1}')).toMatchObject({
      status: 400,
      json: { error: 'hitsAddend: -1 is not a non-negative integer' },
    });
    expect(await post('{"domain":"web","descriptors":[{"entries":[],"hitsAddend":"2.5"}]}')).toMatchObject({
      status: 400,
      json: { error: 'descriptors[0].hitsAddend: "2.5" is not a non-negative integer' },
    });
    expect(await post('{"domain":"web","descriptors":[{"entries":[]}],"hits_addend":1.5}')).toMatchObject({
      status: 400,
      json: { error: 'hitsAddend: 1.5 is not a non-negative integer' },
    });
  });

  it('exports Prometheus metrics', async () => {
    await post(JSON.stringify({ domain: 'web', descriptors: [{ entries: [{ key: 'api_key', value: 'm' }] }] }));
    const text = await (await fetch(`${t.httpBase}/metrics`)).text();
    expect(text).toMatch(/ratelimit_hits_total\{domain="web",key="web\.api_key"\} \d+/);
    expect(text).toContain('ratelimit_decisions_total{domain="web",code="OK"}');
    expect(text).toContain('ratelimit_config_last_reload_success 1');
  });

  it('answers 404 and 405 with the list of routes', async () => {
    expect((await fetch(`${t.httpBase}/nope`)).status).toBe(404);
    expect((await fetch(`${t.httpBase}/json`)).status).toBe(405);
  });
});

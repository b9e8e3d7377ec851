/**
 * Where operators see on_limit: POST /json and `ratelimit query` show the body and headers a rejected client
 * gets (and the upstream headers of a degraded request); GET /rules shows each limit's on_limit as loaded.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runQuery } from '../../src/cli/query.js';
import { MESSAGE_RULES } from '../support/on-limit-rules.js';
import { startTestService, type TestService } from '../support/service.js';

function sink(): Writable & { text: () => string } {
  const chunks: string[] = [];
  const w = new Writable({ write: (c: Buffer, _e, cb) => void (chunks.push(c.toString()), cb()) });
  return Object.assign(w, { text: () => chunks.join('') });
}

describe('on_limit at the operator surfaces', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ 'msg.yaml': MESSAGE_RULES }, { jsonApi: 'on' });
    t.clock.set(1_700_000_080_000); // 20 s before a minute ends
  });
  afterAll(async () => {
    await t.close();
  });

  const post = async (key: string, value: string) => {
    const res = await fetch(`${t.httpBase}/json`, { method: 'POST', body: JSON.stringify({ domain: 'msg', descriptors: [{ entries: [{ key, value }] }] }) });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };

  it('POST /json shows the body (as text and as base64 rawBody), its headers and the HTTP status for ext_authz', async () => {
    await post('json', 'u');
    const { status, json } = await post('json', 'u');
    expect(status).toBe(429);
    expect(json.httpStatus).toBe(403);
    expect(JSON.parse(json.body as string)).toMatchObject({ error: 'daily limit reached', who: 'json=u' });
    expect(Buffer.from(json.rawBody as string, 'base64').toString('utf8')).toBe(json.body);
    expect(json.responseHeadersToAdd).toContainEqual({ key: 'content-type', value: 'application/json' });
  });

  it("ratelimit query prints the body, the headers and a degraded request's upstream headers", async () => {
    const query = async (arg: string) => {
      const out = sink();
      const code = await runQuery(['--spend', '--server', t.grpcAddress, '--domain', 'msg', arg], out, sink());
      return { code, text: out.text() };
    };
    await query('text=q');
    const rejected = await query('text=q');
    expect(rejected.code).toBe(3);
    expect(rejected.text).toContain('  header x-limit-reason: user text=q\n');
    expect(rejected.text).toContain('  body: slow down text=q (per-user, 1 per 60s): retry in 20s\n');
    for (let i = 0; i < 2; i++) await query('degrade=q');
    const degraded = await query('degrade=q');
    expect(degraded.code).toBe(0);
    expect(degraded.text).toContain('  upstream header x-degraded: true\n');
  });

  it("GET /rules shows each limit's on_limit", async () => {
    const rules = (await (await fetch(`${t.httpBase}/rules`)).json()) as { domains: { rules: { stats_key: string; limits: { on_limit?: unknown }[] }[] }[] };
    const byKey = new Map(rules.domains[0]!.rules.map((r) => [r.stats_key, r.limits[0]!.on_limit]));
    expect(byKey.get('msg.backoff')).toEqual({ action: 'reject', retry: 'exponential_backoff', retry_base_ms: 1000, retry_cap_ms: 10_000 });
    expect(byKey.get('msg.degrade')).toEqual({ action: 'degrade', request_headers: { 'x-degraded': 'true' }, degrade_max: 2, retry: 'fixed' });
    expect(byKey.get('msg.redirect')).toEqual({ action: 'redirect', location: 'https://example.com/busy?who={{descriptor}}', status: 303, retry: 'fixed' });
  });
});

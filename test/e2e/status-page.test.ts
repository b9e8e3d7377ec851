/**
 * The admin port's status page beyond what the browser test shows: a failed reload and its errors, rules over
 * xDS with the server away, the top keys off, values from rule files escaped like values from clients.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function page(base: string): Promise<string> {
  const res = await fetch(`${base}/`);
  expect(res.status).toBe(200);
  return res.text();
}

describe('the status page', () => {
  it('shows a failed reload with its errors, the last good rules still listed, a rule value with markup escaped', async () => {
    t = await startTestService({
      'a.yaml': 'domain: a\ndescriptors:\n  - key: path\n    value: "<b>x</b>"\n    rate_limit: {unit: second, requests_per_unit: 5}\n',
    });
    writeFileSync(join(t.dir, 'a.yaml'), 'domain: a\ndescriptors:\n  - key: path\n    rate_limit: {unit: minit, requests_per_unit: 5}\n');
    await t.service.rules.reload();
    const html = await page(t.httpBase);
    expect(html).toContain('<span class="bad">FAILED (the last good rules stay in force)</span>');
    expect(html).toMatch(/<pre>a\.yaml:4:\d+: descriptors\[0\]\.rate_limit\.unit: &#39;minit&#39; is not one of/);
    expect(html).toContain('<code>a.path_&lt;b&gt;x&lt;/b&gt;</code>');
    expect(html).not.toContain('<b>x</b>');
    expect(html).toContain('<h2>Rules in force (1)</h2>');
  });

  it('with rules over xDS and no server: the xDS state and what to check; no RLQS section before a stream', async () => {
    t = await startTestService({}, { configType: 'GRPC_XDS_SOTW', xdsServerUrl: '127.0.0.1:1', forceStartWithoutInitialConfig: true, topKeys: 0 });
    const html = await page(t.httpBase);
    expect(html).toContain('<h2>Rules over xDS</h2>');
    expect(html).toContain('&quot;type&quot;: &quot;GRPC_XDS_SOTW&quot;');
    expect(html).toContain('&quot;server&quot;: &quot;127.0.0.1:1&quot;');
    expect(html).toContain('<p>Off (TOP_KEYS=0).</p>');
    expect(html).not.toContain('Rate Limit Quota Service');
    expect((await fetch(`${t.httpBase}/top`)).status).toBe(404);
  });
});

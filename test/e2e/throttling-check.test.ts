/** `ratelimit check` on rules with throttling: valid ones pass, each mistake is named with file:line:col and exits 1. */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { it } from '../support/fixtures.js';
import type { RulesFolder } from '../support/rules-folder.js';

const BIN = join(import.meta.dirname, '../../bin/ratelimit.mjs');
function check(rules: RulesFolder, text: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const dir = rules.write({ 'api.yaml': text });
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, 'check', dir], { timeout: 20_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe('ratelimit check with throttling', () => {
  it('accepts every mode', async ({ rules }) => {
    const r = await check(
      rules,
      `domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 100, throttling: {soft: 12.5%}, ban: 1h}
  - key: tenant
    rate_limit: {unit: minute, requests_per_unit: 10, algorithm: sliding_window_log, throttling: {elastic: {capacity: 40, max: 15}}}
  - key: api
    rate_limit: {unit: minute, requests_per_unit: 100, algorithm: token_bucket, burst: 200, shares: {default: 80%, sheddable: 50%}}
`,
    );
    expect(r.code, r.stderr).toBe(0);
    // notes (a suggested max_values) are advice; no warning or error
    expect(r.stderr.split('\n').filter((l) => l !== '' && !l.startsWith('note: '))).toEqual([]);
  });

  it('names every mistake with its position and exits 1', async ({ rules }) => {
    const r = await check(
      rules,
      `domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 100, algorithm: leaky_bucket, throttling: {soft: 10%}}
  - key: tenant
    rate_limit: {unit: minute, requests_per_unit: 10, shares: {critical: 50%, default: 80%}, ban: soon}
`,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "api.yaml:4:93: descriptors[0].rate_limit.throttling: soft throttling applies only to fixed_window, sliding_window_log and sliding_window_counter: leaky_bucket has no window to exceed; let more requests through with a larger 'burst' instead",
    );
    expect(r.stderr).toContain(
      'api.yaml:6:88: descriptors[1].rate_limit.shares.default: the default share must not be above the critical share: critical ≥ default ≥ sheddable',
    );
    expect(r.stderr).toContain("api.yaml:6:99: descriptors[1].rate_limit.ban: 'soon' is not a duration like 500ms, 30s, 20m, 36h, 2d or 1w");
  });
});

/** Loading calendar quotas, max_values and validity: every refusal names file:line:col and the field. */
import { describe, expect, it } from 'vitest';
import { compileConfigFiles, type ConfigDescription } from '../../../src/config/index.js';
import { countTimings } from '../../../src/config/compile/rules-in-force.js';
import { checkNotes } from '../../../src/config/compile/check-notes.js';
import { RateLimiter } from '../../../src/core/rate-limiter.js';
import { MemoryStore } from '../../../src/storage/memory/memory-store.js';
import { FakeClock } from '../../../src/vocab/clock.js';

function errors(text: string): string[] {
  const r = compileConfigFiles([{ name: 'e.yaml', text }], { mergeDomains: false });
  return r.ok ? [] : r.errors.map(String);
}

describe('calendar quotas at load', () => {
  it('accepts a calendar month in a zone, and a day in UTC when no zone is given', () => {
    expect(
      errors(
        'domain: d\ndescriptors:\n  - key: k\n    rate_limit: {calendar: month, time_zone: Europe/Berlin, requests_per_unit: 10000}\n  - key: j\n    rate_limit: {calendar: Day, requests_per_unit: 1}\n',
      ),
    ).toEqual([]);
  });
  it('refuses an unknown zone, an unknown period, and a zone without a calendar', () => {
    expect(errors('domain: d\ndescriptors:\n  - key: k\n    rate_limit: {calendar: month, time_zone: Europe/Berlinn, requests_per_unit: 1}\n')).toEqual([
      "e.yaml:4:46: descriptors[0].rate_limit.time_zone: 'Europe/Berlinn' is not a time zone known here (an IANA name such as Europe/Berlin, America/New_York or UTC)",
    ]);
    expect(errors('domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      calendar: mnth\n      requests_per_unit: 1\n')).toEqual([
      "e.yaml:5:17: descriptors[0].rate_limit.calendar: 'mnth' is not one of day, week, month, year (did you mean 'month'?)",
    ]);
    expect(errors('domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: day\n      time_zone: UTC\n      requests_per_unit: 1\n')).toEqual([
      "e.yaml:6:7: descriptors[0].rate_limit.time_zone: 'time_zone' goes with 'calendar' (day, week, month or year)",
    ]);
  });
  it('refuses algorithms other than fixed_window, and unit or window beside it', () => {
    expect(
      errors(
        'domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      calendar: day\n      algorithm: token_bucket\n      unit: day\n      requests_per_unit: 1\n',
      ),
    ).toEqual([
      'e.yaml:6:18: descriptors[0].rate_limit.algorithm: calendar windows are counted by fixed_window only, not token_bucket (a calendar boundary has no meaning to an algorithm that refills or looks back continuously)',
      "e.yaml:7:7: descriptors[0].rate_limit.unit: 'unit' cannot go with 'calendar': 'calendar' gives the window; 'unit' counts fixed lengths from the epoch",
    ]);
  });
});

describe('max_values at load', () => {
  it('accepts a bound and its action; refuses a bad action and an action without a bound', () => {
    expect(
      errors('domain: d\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 1, max_values: 1000, on_max_values: reject}\n'),
    ).toEqual([]);
    expect(
      errors(
        'domain: d\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: minute\n      requests_per_unit: 1\n      max_values: 10\n      on_max_values: drop\n',
      ),
    ).toEqual(["e.yaml:8:22: descriptors[0].rate_limit.on_max_values: 'drop' is not one of overflow, reject"]);
    expect(
      errors('domain: d\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: minute\n      requests_per_unit: 1\n      on_max_values: reject\n'),
    ).toEqual(["e.yaml:7:7: descriptors[0].rate_limit.on_max_values: 'on_max_values' goes with 'max_values'"]);
  });
  it('refuses max_values where no descriptor on the path takes its value from the request', () => {
    expect(
      errors(
        'domain: d\ndescriptors:\n  - key: plan\n    value: gold\n    descriptors:\n      - key: path\n        value: /x\n        rate_limit:\n          unit: minute\n          requests_per_unit: 1\n          max_values: 10\n',
      ),
    ).toEqual([
      "e.yaml:11:11: descriptors[0].descriptors[0].rate_limit.max_values: max_values bounds the values a client chooses, but every descriptor on this rule's path has a fixed value: the rule keeps one counter per window; remove max_values",
    ]);
    // A value chosen above (user), a wildcard, or a key pattern: per-client counters, bounded.
    const open = [
      '  - key: user\n    descriptors:\n      - key: path\n        value: /x\n        rate_limit: {unit: minute, requests_per_unit: 1, max_values: 10}\n',
      '  - key: path\n    value: /api/*\n    rate_limit: {unit: minute, requests_per_unit: 1, max_values: 10}\n',
      '  - key: x-*\n    value: v\n    rate_limit: {unit: minute, requests_per_unit: 1, max_values: 10}\n',
    ];
    for (const d of open) expect(errors(`domain: d\ndescriptors:\n${d}`)).toEqual([]);
    // A shared wildcard counts every matching value in one counter.
    expect(
      errors(
        'domain: d\ndescriptors:\n  - key: path\n    value: /api/*\n    share_threshold: true\n    rate_limit: {unit: minute, requests_per_unit: 1, max_values: 10}\n',
      ),
    ).toEqual([expect.stringMatching(/^e\.yaml:6:\d+: descriptors\[0\]\.rate_limit\.max_values: max_values bounds the values a client chooses/)]);
  });
  it('refuses on_max_values: reject beside elastic throttling', () => {
    expect(
      errors(
        'domain: d\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: minute\n      requests_per_unit: 10\n      throttling: {elastic: {capacity: 100, max: 20}}\n      max_values: 10\n      on_max_values: reject\n',
      ),
    ).toEqual([
      "e.yaml:9:22: descriptors[0].rate_limit.on_max_values: on_max_values: reject cannot go with elastic throttling: a value rejected past the bound could borrow the rule's spare capacity and be admitted; use overflow",
    ]);
  });
});

describe('valid_from / valid_until', () => {
  const RULES = `domain: d
valid_until: 2030-01-01T00:00:00Z
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: user
    value: launch
    valid_from: 2025-06-01T08:00:00+02:00
    valid_until: 2025-06-02T08:00:00+02:00
    rate_limit: {unit: minute, requests_per_unit: 3}
`;
  async function decisions(at: string, value: string, n: number): Promise<string[]> {
    const compiled = compileConfigFiles([{ name: 'd.yaml', text: RULES }], { mergeDomains: false });
    if (!compiled.ok) throw new Error(compiled.errors.map(String).join('\n'));
    const config = compiled.config;
    const clock = new FakeClock(Date.parse(at));
    const limiter = new RateLimiter({
      store: new MemoryStore({ maxKeys: 100 }),
      clock,
      config: () => config,
      keyPrefix: 't:',
      headers: { mode: 'none', xRateLimit: false },
      nearLimitRatio: 0.8,
    });
    const out: string[] = [];
    for (let i = 0; i < n; i++)
      out.push((await limiter.decide({ domain: 'd', descriptors: [{ entries: [{ key: 'user', value }] }], hitsAddend: 1 })).overallCode);
    return out;
  }

  it('a raise is in force only inside its interval; outside it the value falls back to the key-only rule, without a reload', async () => {
    expect(await decisions('2025-06-01T05:59:59Z', 'launch', 2)).toEqual(['OK', 'OVER_LIMIT']);
    expect(await decisions('2025-06-01T06:00:00Z', 'launch', 4)).toEqual(['OK', 'OK', 'OK', 'OVER_LIMIT']);
    expect(await decisions('2025-06-02T06:00:00Z', 'launch', 2)).toEqual(['OK', 'OVER_LIMIT']);
  });

  it('a file past its valid_until has no rules: its domain limits nothing', async () => {
    expect(await decisions('2029-12-31T23:59:59Z', 'x', 2)).toEqual(['OK', 'OVER_LIMIT']);
    expect(await decisions('2030-01-01T00:00:00Z', 'x', 3)).toEqual(['OK', 'OK', 'OK']);
  });

  it('/rules shows each rule interval, narrowed by the file', () => {
    const compiled = compileConfigFiles([{ name: 'd.yaml', text: RULES }], { mergeDomains: false });
    if (!compiled.ok) throw new Error('refused');
    const rules = (compiled.config.describe() as ConfigDescription)[0]!.rules;
    expect(rules.map((r) => [r.valid_from, r.valid_until])).toEqual([
      [undefined, '2030-01-01T00:00:00.000Z'],
      ['2025-06-01T06:00:00.000Z', '2025-06-02T06:00:00.000Z'],
    ]);
    expect(countTimings(compiled.config.describe() as ConfigDescription, Date.parse('2026-01-01T00:00:00Z')).get('d')).toEqual({
      in_force: 1,
      not_yet: 0,
      ended: 1,
    });
  });

  it('refuses a time that is not RFC 3339, and an interval that ends before it starts', () => {
    expect(
      errors(
        'domain: d\nvalid_from: 2025-13-01T00:00:00Z\ndescriptors:\n  - key: k\n    valid_from: 2025-06-02T00:00:00Z\n    valid_until: 2025-06-01T00:00:00Z\n    rate_limit: {unit: minute, requests_per_unit: 1}\n',
      ),
    ).toEqual([
      "e.yaml:2:13: valid_from: '2025-13-01T00:00:00Z' is not an RFC 3339 date-time such as 2025-12-24T18:00:00Z or 2025-12-24T19:00:00+01:00",
      'e.yaml:6:18: descriptors[0].valid_until: valid_until must be later than valid_from',
    ]);
  });
});

describe('ratelimit check notes', () => {
  it('names ended rules, rules ending within 7 days (how soon), and per-value rules without max_values', () => {
    const text = `domain: d
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: bounded
    rate_limit: {unit: minute, requests_per_unit: 1, max_values: 10}
  - key: tenant
    value: soon
    valid_until: 2026-01-03T00:00:00Z
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: tenant
    value: old
    valid_until: 2025-12-01T00:00:00Z
    rate_limit: {unit: minute, requests_per_unit: 1}
`;
    const compiled = compileConfigFiles([{ name: 'd.yaml', text }], { mergeDomains: false });
    if (!compiled.ok) throw new Error('refused');
    expect(checkNotes(compiled.config.describe() as ConfigDescription, Date.parse('2026-01-01T00:00:00Z'))).toEqual([
      "d.yaml:3: rule 'd.user' keeps a counter per value of 'user', which the client chooses; bound them with max_values (e.g. max_values: 100000, the distinct clients you expect per window with room to spare; past it new values share one overflow counter)",
      "d.yaml:7: rule 'd.tenant_soon' ends in 2 days, at 2026-01-03T00:00:00.000Z (valid_until)",
      "d.yaml:11: rule 'd.tenant_old' ended at 2025-12-01T00:00:00.000Z (valid_until) and decides nothing; remove it or move valid_until",
    ]);
  });
});

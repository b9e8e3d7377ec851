/** Loading calendar quotas, max_values and validity: every refusal names file:line:col and the field. */
import { describe, expect, it } from 'vitest';
import { compileConfigFiles } from '../../../src/config/index.js';

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
});

/** Doorman's resource file: loads unchanged; every mistake named by file:line:col and field. */
import { describe, expect, it } from 'vitest';
import { parseCapacityConfig } from '../../../src/capacity/config.js';

const DOORMAN_EXAMPLE = `resources:
  - identifier_glob: fair
    capacity: 1000
    safe_capacity: 10
    description: one fair resource
    algorithm: {kind: FAIR_SHARE, lease_length: 15, refresh_interval: 5, learning_mode_duration: 0}
  - identifier_glob: "api-*"
    capacity: 50
    algorithm:
      kind: PROPORTIONAL_SHARE
      lease_length: 60
      refresh_interval: 15
      parameters:
        - name: some_parameter
          value: "1"
  - identifier_glob: "*"
    capacity: 1000
    algorithm: {kind: STATIC, lease_length: 60, refresh_interval: 15}
`;

function errors(text: string): string[] {
  const r = parseCapacityConfig('res.yaml', text);
  return r.ok ? [] : r.errors.map(String);
}

describe('capacity resource file', () => {
  it("loads Doorman's file unchanged and finds templates: exact id, then the first matching glob, then *", () => {
    const r = parseCapacityConfig('res.yaml', DOORMAN_EXAMPLE);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.config.find('fair').capacity).toBe(1000);
    expect(r.config.find('fair').safeCapacity).toBe(10);
    expect(r.config.find('api-users').algorithm.kind).toBe('PROPORTIONAL_SHARE');
    expect(r.config.find('api-users').algorithm.parameters).toEqual([{ name: 'some_parameter', value: '1' }]);
    expect(r.config.find('other').algorithm.kind).toBe('STATIC');
    // Doorman's default learning mode: the lease length.
    expect(r.config.find('other').algorithm.learningModeDuration).toBe(60);
    expect(r.config.find('fair').algorithm.learningModeDuration).toBe(0);
  });

  it('requires the "*" template, last', () => {
    expect(errors(`resources:\n  - identifier_glob: a\n    capacity: 1\n    algorithm: {kind: STATIC, lease_length: 2, refresh_interval: 1}\n`)).toEqual([
      'res.yaml:1:1: resources: a template with identifier_glob "*" is required (the catch-all, last)',
    ]);
    const misplaced = `resources:\n  - identifier_glob: "*"\n    capacity: 1\n    algorithm: {kind: STATIC, lease_length: 2, refresh_interval: 1}\n  - identifier_glob: a\n    capacity: 1\n    algorithm: {kind: STATIC, lease_length: 2, refresh_interval: 1}\n`;
    expect(errors(misplaced)).toEqual(['res.yaml:2:5: resources[0].identifier_glob: the "*" template must be the last one']);
  });

  it('names file, line, column and field of every mistake', () => {
    const text = `resources:
  - identifier_glob: a
    capacity: -1
    algorithm: {kind: FAIR, lease_length: 5, refresh_interval: 10}
  - identifier_glob: b
    capcity: 5
    algorithm: {kind: STATIC, lease_length: 0, refresh_interval: 1}
  - identifier_glob: "*"
    capacity: 1
    algorithm: {kind: STATIC, lease_length: 2, refresh_interval: 1, parameters: [{name: max_min, value: "true"}]}
`;
    expect(errors(text)).toEqual([
      'res.yaml:3:15: resources[0].capacity: must be a number ≥ 0, not the number -1',
      "res.yaml:4:23: resources[0].algorithm.kind: 'FAIR' is not one of NO_ALGORITHM, STATIC, PROPORTIONAL_SHARE, FAIR_SHARE",
      'res.yaml:4:64: resources[0].algorithm.refresh_interval: 10 is longer than lease_length 5: a lease must outlive its refresh interval',
      expect.stringMatching(/^res\.yaml:6:5: resources\[1\]\.capcity: unknown key/),
      'res.yaml:5:5: resources[1].capacity: is required',
      'res.yaml:7:45: resources[1].algorithm.lease_length: must be an integer from 1 to 31622400, not 0',
      'res.yaml:10:16: resources[2].algorithm.parameters: max_min applies to kind FAIR_SHARE only',
    ]);
  });

  it('turns FAIR_SHARE with max_min into the water-filling kind, announced to peers as FAIR_SHARE', () => {
    const r = parseCapacityConfig(
      'res.yaml',
      `resources:\n  - identifier_glob: "*"\n    capacity: 1\n    algorithm: {kind: FAIR_SHARE, lease_length: 2, refresh_interval: 1, parameters: [{name: max_min, value: "true"}]}\n`,
    );
    expect(r.ok && r.config.find('x').algorithm).toMatchObject({ kind: 'FAIR_SHARE_MAXMIN', wireKind: 'FAIR_SHARE' });
  });

  it('refuses YAML syntax errors and non-mappings without crashing', () => {
    expect(errors('resources: [')[0]).toMatch(/^res\.yaml:\d+:\d+: YAML syntax error/);
    expect(errors('- a\n- b\n')).toEqual(["res.yaml:1:1: a resource file must be a mapping with 'resources', not a list"]);
    expect(errors('')[0]).toMatch(/^res\.yaml:1:1: a resource file must be a mapping/);
  });
});

/**
 * RESPONSE_DYNAMIC_METADATA: the rules' `metadata` in the answer's dynamic metadata, under `metadata`, exactly
 * as envoyproxy/ratelimit sends it. Each expectation was measured on the reference binary
 * (shared/tools/envoy-ratelimit at f2fb157, RESPONSE_DYNAMIC_METADATA=true, POST /json) with these rules and
 * requests, each on a fresh reference: only descriptors that passed contribute (not unlimited, not over the
 * limit; a shadow_mode rule always passes), in request order, the first value of a key kept and mappings merged
 * recursively; only the matched node's own metadata; none for an override, a replaced limit, a node without a
 * limit, `detailed_metric` on a leaf or a `value_to_metric` key-only match (the reference rebuilds those limits
 * without it); nested keys named as yaml.v2 reads them.
 */
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.js';

const RULES = `domain: m
descriptors:
  - key: a
    metadata: {tier: gold, nested: {x: 1, shared: a}, list: [1, 2]}
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: b
    metadata: {tier: silver, nested: {y: 2, shared: b}, other: true, list: [3]}
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: u
    metadata: {unl: yes}
    rate_limit: {unlimited: true}
  - key: s
    metadata: {shadow: 1}
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: q
    metadata: {quota: 1}
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: d
    metadata: {detailed: 1}
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: dp
    metadata: {detailedParent: 1}
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 100}
    descriptors:
      - key: c
        rate_limit: {unit: minute, requests_per_unit: 100}
  - key: vm
    value_to_metric: true
    metadata: {vm: 1}
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: vmx
    value: fixed
    value_to_metric: true
    metadata: {vmx: 1}
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: w
    value: "pre*"
    metadata: {wild: 1}
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: parent
    metadata: {parentMeta: 1}
    descriptors:
      - key: child
        metadata: {childMeta: 1}
        rate_limit: {unit: minute, requests_per_unit: 100}
  - key: nolimit
    metadata: {noLimit: 1}
  - key: named
    metadata: {named: 1}
    rate_limit: {name: nm, unit: minute, requests_per_unit: 100}
  - key: replacer
    metadata: {replacer: 1}
    rate_limit: {unit: minute, requests_per_unit: 100, replaces: [{name: nm}]}
  - key: e
    metadata: {}
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: t
    metadata: {t: {deep: {one: 1}}, z: null}
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: t2
    metadata: {t: {deep: {two: 2}, flat: 3}, z: 5}
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: k
    metadata: {404: top, y: top, n: {y: 1, 0x10: 2, 1.50: 3, 1e6: 4, 1234567.0: 5, 0.00001: 6, ~: 7, 'on': 8, 017: 9, -0.0: 10, .inf: 11}}
    rate_limit: {unit: minute, requests_per_unit: 100}
`;

type Descriptor = { entries: { key: string; value: string }[]; limit?: { requestsPerUnit: number; unit: string } };
const d = (...pairs: [string, string][]): Descriptor => ({ entries: pairs.map(([key, value]) => ({ key, value })) });

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ 'm.yaml': RULES }, { responseDynamicMetadata: true, jsonApi: 'on' });
});
afterAll(async () => {
  await service?.close();
});
beforeEach(() => {
  service.timer.advance(3_600_000); // fresh windows: every case starts as on a fresh reference
});

/**
 * The answer's overall code, descriptor codes and `dynamicMetadata.metadata` (undefined when left out).
 * REFERENCE_JSON=http://host:port/json sends the requests to a reference started with these rules instead (one
 * fresh reference per case: `-t` with the case's name), which is how the expectations were measured.
 */
async function ask(...descriptors: Descriptor[]): Promise<[string, string[], unknown]> {
  const res = await fetch(process.env.REFERENCE_JSON ?? `${service.httpBase}/json`, { method: 'POST', body: JSON.stringify({ domain: 'm', descriptors }) });
  const body = (await res.json()) as { overallCode: string; statuses: { code: string }[]; dynamicMetadata: { metadata?: unknown } };
  return [body.overallCode, body.statuses.map((s) => s.code), body.dynamicMetadata.metadata];
}

const A = { list: [1, 2], nested: { shared: 'a', x: 1 }, tier: 'gold' };
const B = { list: [3], nested: { shared: 'b', true: 2 }, other: true, tier: 'silver' };

it('one rule: its metadata (nested keys as yaml.v2 reads them: `y` is "true")', async () => {
  expect(await ask(d(['a', '1']))).toEqual(['OK', ['OK'], A]);
  expect(await ask(d(['b', '1']))).toEqual(['OK', ['OK'], B]);
});

it('several: merged in request order, the first value of a key kept, mappings merged, lists not joined', async () => {
  expect(await ask(d(['a', '1']), d(['b', '1']))).toEqual([
    'OK',
    ['OK', 'OK'],
    { list: [1, 2], nested: { shared: 'a', true: 2, x: 1 }, other: true, tier: 'gold' },
  ]);
  expect(await ask(d(['b', '2']), d(['a', '2']))).toEqual([
    'OK',
    ['OK', 'OK'],
    { list: [3], nested: { shared: 'b', true: 2, x: 1 }, other: true, tier: 'silver' },
  ]);
  expect(await ask(d(['t', '1']), d(['t2', '1']))).toEqual(['OK', ['OK', 'OK'], { t: { deep: { one: 1, two: 2 }, flat: 3 }, z: null }]);
  expect(await ask(d(['t2', '1']), d(['t', '1']))).toEqual(['OK', ['OK', 'OK'], { t: { deep: { one: 1, two: 2 }, flat: 3 }, z: 5 }]);
});

it('each answer merges afresh: an earlier merge does not stay in a rule (the reference keeps it)', async () => {
  await ask(d(['a', '3']), d(['b', '3']));
  expect(await ask(d(['a', '4']))).toEqual(['OK', ['OK'], A]);
});

it('only descriptors that passed: not over the limit, not unlimited; shadow_mode passes, quota_mode over does not', async () => {
  expect(await ask(d(['a', 'o']), d(['b', 'o']))).toEqual([
    'OK',
    ['OK', 'OK'],
    { list: [1, 2], nested: { shared: 'a', true: 2, x: 1 }, other: true, tier: 'gold' },
  ]);
  expect(await ask(d(['a', 'o']), d(['b', 'o']))).toEqual(['OVER_LIMIT', ['OVER_LIMIT', 'OK'], B]);
  expect(await ask(d(['u', '1']), d(['b', 'u']))).toEqual(['OK', ['OK', 'OK'], B]);
  expect(await ask(d(['s', '1']))).toEqual(['OK', ['OK'], { shadow: 1 }]);
  expect(await ask(d(['s', '1']))).toEqual(['OK', ['OK'], { shadow: 1 }]); // over its limit, in shadow mode
  expect(await ask(d(['q', '1']), d(['b', 'q']))).toEqual(['OK', ['OK', 'OK'], { ...B, quota: 1 }]);
  expect(await ask(d(['q', '1']), d(['b', 'q']))).toEqual(['OVER_LIMIT', ['OVER_LIMIT', 'OK'], B]);
  expect(await ask(d(['q', '1']), d(['q', '2']))).toEqual(['OK', ['OVER_LIMIT', 'OK'], { quota: 1 }]);
  expect(await ask(d(['zz', '1']), d(['b', 'z']))).toEqual(['OK', ['OK', 'OK'], B]);
});

it('only the matched node with a limit; none for an override, a replaced limit, an empty mapping', async () => {
  expect(await ask(d(['parent', '1'], ['child', '1']))).toEqual(['OK', ['OK'], { childMeta: 1 }]);
  expect((await ask(d(['parent', '1'])))[2]).toBeUndefined();
  expect((await ask(d(['nolimit', '1'])))[2]).toBeUndefined();
  expect(await ask(d(['w', 'prefix']))).toEqual(['OK', ['OK'], { wild: 1 }]);
  expect(await ask(d(['named', '1']))).toEqual(['OK', ['OK'], { named: 1 }]);
  expect(await ask(d(['named', '1']), d(['replacer', '1']))).toEqual(['OK', ['OK', 'OK'], { replacer: 1 }]);
  expect((await ask({ ...d(['b', 'o']), limit: { requestsPerUnit: 5, unit: 'MINUTE' } }))[2]).toBeUndefined();
  expect((await ask(d(['e', '1'])))[2]).toBeUndefined();
});

it('none where the reference rebuilds the limit: detailed_metric on a leaf, value_to_metric on a key-only match', async () => {
  expect((await ask(d(['d', '1'])))[2]).toBeUndefined();
  expect(await ask(d(['dp', '1']))).toEqual(['OK', ['OK'], { detailedParent: 1 }]);
  expect((await ask(d(['dp', '1'], ['c', '1'])))[2]).toBeUndefined();
  expect((await ask(d(['vm', '1'])))[2]).toBeUndefined();
  expect(await ask(d(['vmx', 'fixed']))).toEqual(['OK', ['OK'], { vmx: 1 }]);
});

it("names nested keys with Go's %v of what yaml.v2 read; the top level's stay as written", async () => {
  expect((await ask(d(['k', '1'])))[2]).toEqual({
    404: 'top',
    y: 'top',
    n: { true: 1, 16: 2, '1.5': 3, '1e+06': 4, '1.234567e+06': 5, '1e-05': 6, '<nil>': 7, on: 8, 15: 9, '-0': 10, '+Inf': 11 },
  });
});

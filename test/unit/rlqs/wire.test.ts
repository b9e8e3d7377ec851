/**
 * The reports codec against Envoy's own rlqs.proto (repeated BucketQuotaUsage, as Envoy 1.40 sends it) and
 * against the map<uint64, BucketQuotaUsage> form of the published proto, hand-encoded; its bounds and errors.
 */
import { describe, expect, it } from 'vitest';
import { decodeUsageReports, encodeResponse } from '../../../src/rlqs/rlqs-codec.js';
import { InvalidRequestError } from '../../../src/vocab/errors.js';
import { prng } from '../../support/prng.js';
import { decodeResponse, encodeReports } from '../../support/rlqs.js';

const LIMITS = { maxEntries: 2, maxValueBytes: 8 };

describe('RLQS wire', () => {
  it('reads a repeated BucketQuotaUsage with its time_elapsed (field 2, a message) and sorts the bucket id by key', () => {
    const bytes = encodeReports('edge', [{ bucket: { zone: 'eu', name: 'all' }, allowed: 7, denied: 3, elapsedS: 5 }]);
    expect(decodeUsageReports(bytes, LIMITS)).toEqual({
      domain: 'edge',
      usages: [
        {
          entries: [
            { key: 'name', value: 'all' },
            { key: 'zone', value: 'eu' },
          ],
          allowed: 7,
          denied: 3,
          elapsedS: 5,
        },
      ],
    });
  });

  it('reads the map form: entries {key = 1 (uint64), value = 2 (BucketQuotaUsage)}', () => {
    const usage = Buffer.from([0x0a, 0x0d, 0x0a, 0x0b, 0x0a, 0x01, 0x6b, 0x12, 0x06, 0x76, 0x61, 0x6c, 0x75, 0x65, 0x73, 0x18, 0x04]); // bucket_id {bucket {k: values}}, allowed 4
    const entry = Buffer.concat([Buffer.from([0x08, 0x2a, 0x12, usage.length]), usage]);
    const msg = Buffer.concat([Buffer.from([0x0a, 0x01, 0x64, 0x12, entry.length]), entry]);
    expect(decodeUsageReports(msg, { ...LIMITS, maxValueBytes: 16 })).toEqual({
      domain: 'd',
      usages: [{ entries: [{ key: 'k', value: 'values' }], allowed: 4, denied: 0, elapsedS: 0 }],
    });
  });

  it('refuses, naming the field, a missing bucket id and a truncated message', () => {
    expect(() => decodeUsageReports(Buffer.from([0x12, 0x02, 0x18, 0x01]), LIMITS)).toThrow(/bucket_id missing/);
    expect(() => decodeUsageReports(Buffer.from([0x12, 0x05, 0x0a]), LIMITS)).toThrow(/malformed RateLimitQuotaUsageReports/);
  });

  it('decodes every bucket of a report, marking (not refusing) bucket ids past the id bounds', () => {
    const bytes = encodeReports('d', [
      { bucket: { a: '1', b: '2', c: '3' } },
      { bucket: { n: 'ok' }, allowed: 2 },
      { bucket: { a: '123456789' } },
      ...[1, 2, 3, 4].map((i) => ({ bucket: { n: String(i) } })),
    ]);
    const m = decodeUsageReports(bytes, LIMITS);
    expect(m.usages).toHaveLength(7);
    expect(m.usages.map((u) => u.oversize === true)).toEqual([true, false, true, false, false, false, false]);
    expect(m.usages[1]).toEqual({ entries: [{ key: 'n', value: 'ok' }], allowed: 2, denied: 0, elapsedS: 0 });
  });

  it('marks a bucket id that is not UTF-8 (Envoy cannot read an answer for it), keeping distinct bytes distinct', () => {
    // {tenant: ff fe}, {tenant: fe ff} and {tenant: é (c3 a9)}, hand-encoded as Envoy sends a header's bytes.
    const usage = (value: number[]) => {
      const entry = Buffer.from([0x0a, 0x06, ...Buffer.from('tenant'), 0x12, value.length, ...value]);
      const id = Buffer.from([0x0a, entry.length, ...entry]);
      const u = Buffer.from([0x0a, id.length, ...id]);
      return Buffer.from([0x12, u.length, ...u]);
    };
    const decoded = decodeUsageReports(Buffer.concat([usage([0xff, 0xfe]), usage([0xfe, 0xff]), usage([0xc3, 0xa9])]), LIMITS);
    expect(decoded.usages.map((u) => u.notUtf8 === true)).toEqual([true, true, false]);
    expect(decoded.usages[0]!.entries[0]!.value).not.toBe(decoded.usages[1]!.entries[0]!.value);
    expect(decoded.usages[2]!.entries[0]!.value).toBe('é');
    expect(encodeResponse([{ entries: decoded.usages[2]!.entries, assignment: { kind: 'deny_all', ttlS: 1 } }]).toString('hex')).toContain('1202c3a9');
  });

  it("writes actions Envoy's proto reads back: token bucket, blankets, abandon", () => {
    const id = [{ key: 'name', value: 'all' }];
    const actions = decodeResponse(
      encodeResponse([
        { entries: id, assignment: { kind: 'token_bucket', ttlS: 30, maxTokens: 7, tokensPerFill: 7, fillIntervalS: 60 } },
        { entries: id, assignment: { kind: 'allow_all', ttlS: 30 } },
        { entries: id, assignment: { kind: 'deny_all', ttlS: 5 } },
        { entries: id, assignment: { kind: 'abandon' } },
      ]),
    );
    expect(actions).toEqual([
      {
        bucket_id: { bucket: { name: 'all' } },
        quota_assignment_action: {
          assignment_time_to_live: { seconds: 30 },
          rate_limit_strategy: { token_bucket: { max_tokens: 7, tokens_per_fill: { value: 7 }, fill_interval: { seconds: 60 } } },
        },
      },
      {
        bucket_id: { bucket: { name: 'all' } },
        quota_assignment_action: { assignment_time_to_live: { seconds: 30 }, rate_limit_strategy: { blanket_rule: 'ALLOW_ALL' } },
      },
      {
        bucket_id: { bucket: { name: 'all' } },
        quota_assignment_action: { assignment_time_to_live: { seconds: 5 }, rate_limit_strategy: { blanket_rule: 'DENY_ALL' } },
      },
      { bucket_id: { bucket: { name: 'all' } }, abandon_action: {} },
    ]);
  });

  it('answers any bytes with a decoded message or an InvalidRequestError: 3,000 mutated and random messages', () => {
    const r = prng('rlqs-wire');
    const valid = encodeReports('edge', [{ bucket: { name: 'all', zone: 'eu' }, allowed: 300, denied: 2, elapsedS: 5 }, { bucket: { tenant: 'acme' } }]);
    for (let i = 0; i < 3000; i++) {
      let bytes: Buffer;
      if (i % 3 === 0) bytes = Buffer.from(Array.from({ length: r.int(0, 64) }, () => r.int(0, 255)));
      else {
        bytes = Buffer.from(valid);
        for (let k = r.int(1, 4); k > 0; k--) bytes[r.int(0, bytes.length - 1)] = r.int(0, 255);
        if (r.chance(0.3)) bytes = bytes.subarray(0, r.int(0, bytes.length));
      }
      try {
        const m = decodeUsageReports(bytes, LIMITS);
        for (const u of m.usages) expect(u.entries.length).toBeGreaterThan(0);
      } catch (err) {
        expect(err, `input ${bytes.toString('hex')}`).toBeInstanceOf(InvalidRequestError);
      }
    }
  });
});

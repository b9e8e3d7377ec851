/**
 * End to end over a real gRPC socket: the service as `npm start` builds it (memory store), rules from a
 * temp dir, a FakeClock for time. Clients: the proto-loader one and the independent hand-encoded one.
 */
import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawRlsClient } from '../support/raw-rls.js';
import { RlsTestClient } from '../support/rls-client.js';
import { startTestService, type TestService } from '../support/service.js';

const RULES = `
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: generic_key
    value: api
    descriptors:
      - key: user
        rate_limit: {unit: second, requests_per_unit: 2, name: per-user}
  - key: plan
    value: free
    rate_limit: {unit: hour, requests_per_unit: 5, name: free}
  - key: plan
    value: gold
    rate_limit: {unit: hour, requests_per_unit: 1000, name: gold, replaces: [{name: free}]}
  - key: internal
    rate_limit: {unlimited: true}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: weekly
    rate_limit: {unit: week, requests_per_unit: 10}
  - key: quota
    quota_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1}
`;

let t: TestService;
let client: RlsTestClient;
let raw: RawRlsClient;

beforeAll(async () => {
  // RESPONSE_DYNAMIC_METADATA on: the metadata tests below read it (it is off by default, as in the reference).
  t = await startTestService({ 'edge.yaml': RULES }, { responseDynamicMetadata: true });
  client = new RlsTestClient(t.grpcAddress);
  raw = new RawRlsClient(t.grpcAddress);
});
afterAll(async () => {
  client.close();
  raw.close();
  await t.close();
});

/** A fresh window for each test: move the clock to 1 ms into the next hour. */
function nextHour(): void {
  const now = t.clock.nowMs();
  t.clock.set(now - (now % 3_600_000) + 3_600_000 + 1);
}

describe('ShouldRateLimit over gRPC', () => {
  it('counts, reports remaining and reset, then rejects', async () => {
    nextHour();
    t.clock.advance(20_000); // 20.001 s into the minute: 40 s to reset (rounded up)
    for (const remaining of [2, 1, 0]) {
      const r = await client.ask('edge', [[['remote_address', '10.0.0.1']]]);
      expect(r.overall_code).toBe('OK');
      expect(r.statuses).toHaveLength(1);
      expect(r.statuses[0]).toMatchObject({ code: 'OK', limit_remaining: remaining, current_limit: { requests_per_unit: 3, unit: 'MINUTE' } });
      expect(r.statuses[0]!.duration_until_reset?.seconds).toBe('40');
    }
    const over = await client.ask('edge', [[['remote_address', '10.0.0.1']]]);
    expect(over.overall_code).toBe('OVER_LIMIT');
    expect(over.statuses[0]).toMatchObject({ code: 'OVER_LIMIT', limit_remaining: 0 });
    expect(over.response_headers_to_add).toContainEqual(expect.objectContaining({ key: 'retry-after', value: '40' }));
    // Another address has its own counter.
    expect((await client.ask('edge', [[['remote_address', '10.0.0.2']]])).overall_code).toBe('OK');
    // The next window admits again.
    t.clock.advance(40_000);
    expect((await client.ask('edge', [[['remote_address', '10.0.0.1']]])).statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 2 });
  });

  it('answers one status per descriptor, in order; no match and unknown domain are OK without a limit', async () => {
    nextHour();
    const r = await client.ask('edge', [
      [['nothing', 'here']],
      [
        ['generic_key', 'api'],
        ['user', 'alice'],
      ],
      [['remote_address', '10.0.1.1']],
    ]);
    expect(r.overall_code).toBe('OK');
    expect(r.statuses.map((s) => s.current_limit?.requests_per_unit ?? null)).toEqual([null, 2, 3]);
    expect(r.statuses[0]).toMatchObject({ code: 'OK', current_limit: null, limit_remaining: 0 });
    expect(r.statuses[1]!.current_limit).toMatchObject({ name: 'per-user', unit: 'SECOND' });
    const unknown = await client.ask('nope', [[['remote_address', '10.0.1.1']]]);
    expect(unknown).toMatchObject({ overall_code: 'OK', statuses: [{ code: 'OK', current_limit: null }] });
  });

  it('a rejected request consumes no quota from any of its limits', async () => {
    nextHour();
    const user = [
      ['generic_key', 'api'],
      ['user', 'bob'],
    ];
    await client.ask('edge', [user, user]); // uses both of bob's 2 per second
    const ip = [['remote_address', '10.0.2.1']];
    const rejected = await client.ask('edge', [ip, user]);
    expect(rejected.overall_code).toBe('OVER_LIMIT');
    expect(rejected.statuses.map((s) => s.code)).toEqual(['OK', 'OVER_LIMIT']);
    // The address still has all 3.
    expect((await client.ask('edge', [ip])).statuses[0]!.limit_remaining).toBe(2);
  });

  it('applies request-level and per-descriptor hits_addend', async () => {
    nextHour();
    const ip = [['remote_address', '10.0.3.1']];
    expect((await client.ask('edge', [ip], 2)).statuses[0]!.limit_remaining).toBe(1);
    expect((await client.ask('edge', [ip], 2)).overall_code).toBe('OVER_LIMIT'); // 2 + 2 > 3, nothing counted
    const check = await client.shouldRateLimit({
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'remote_address', value: '10.0.3.1' }], hits_addend: { value: '0' } }],
    });
    expect(check.statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 1 });
    const five = await client.shouldRateLimit({
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'remote_address', value: '10.0.3.2' }], hits_addend: { value: '3' } }],
      hits_addend: 1,
    });
    expect(five.statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 0 });
  });

  it('unlimited, replaces, shadow_mode and the request-level override', async () => {
    nextHour();
    const unlimited = await client.ask('edge', [[['internal', 'x']]]);
    expect(unlimited.statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 4294967295, current_limit: null });

    const replaced = await client.ask('edge', [[['plan', 'free']], [['plan', 'gold']]]);
    expect(replaced.statuses[0]).toMatchObject({ code: 'OK', current_limit: null });
    expect(replaced.statuses[1]!.current_limit).toMatchObject({ name: 'gold', requests_per_unit: 1000 });

    await client.ask('edge', [[['shadow', 's']]]);
    const shadow = await client.ask('edge', [[['shadow', 's']]]);
    expect(shadow.overall_code).toBe('OK');
    expect(shadow.statuses[0]!.code).toBe('OK');

    const override = {
      domain: 'edge',
      descriptors: [{ entries: [{ key: 'remote_address', value: '10.0.4.1' }], limit: { requests_per_unit: 1, unit: 'SECOND' } }],
    };
    const first = await client.shouldRateLimit(override);
    expect(first.statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 0, current_limit: { requests_per_unit: 1, unit: 'SECOND' } });
    expect((await client.shouldRateLimit(override)).overall_code).toBe('OVER_LIMIT');
  });

  it('quota_mode: a descriptor over reads OVER_LIMIT, the request is rejected only when every quota descriptor is over (as the reference)', async () => {
    nextHour();
    const [q1, q2] = [[['quota', 'backend-1']], [['quota', 'backend-2']]];
    const ip = [['remote_address', '10.0.5.1']];
    expect((await client.ask('edge', [q1, ip])).overall_code).toBe('OK'); // backend-1 used up
    const failover = await client.ask('edge', [q1, q2, ip]);
    expect(failover.overall_code).toBe('OK'); // backend-2 still has quota
    // envoyproxy/ratelimit marks the quota descriptor that is over, though the request is admitted.
    expect(failover.statuses.map((s) => s.code)).toEqual(['OVER_LIMIT', 'OK', 'OK']);
    expect(failover.response_headers_to_add).not.toContainEqual(expect.objectContaining({ key: 'retry-after' }));
    // google.protobuf.Struct as protobufjs decodes it (its bundled well-known types use camelCase names).
    const fields = failover.dynamic_metadata!.fields as Record<
      string,
      { listValue?: { values: { numberValue: number }[] }; boolValue?: boolean; stringValue?: string }
    >;
    expect(fields.quotaModeEnabled!.boolValue).toBe(true);
    expect(fields.domain!.stringValue).toBe('edge');
    expect(fields.quotaModeViolations!.listValue!.values.map((v) => v.numberValue)).toEqual([0]);
    // Now both are over: the request is rejected, like envoyproxy/ratelimit does.
    const allOver = await client.ask('edge', [q1, q2]);
    expect(allOver.overall_code).toBe('OVER_LIMIT');
    expect(allOver.statuses).toMatchObject([
      { code: 'OVER_LIMIT', limit_remaining: 0 },
      { code: 'OVER_LIMIT', limit_remaining: 0 },
    ]);
    expect(allOver.response_headers_to_add).toContainEqual(expect.objectContaining({ key: 'retry-after' }));
  });

  it('rejects an empty domain or no descriptors with INVALID_ARGUMENT', async () => {
    await expect(client.ask('', [[['remote_address', '1']]])).rejects.toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      details: 'rate limit domain must not be empty',
    });
    await expect(client.ask('edge', [])).rejects.toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      details: 'rate limit descriptor list must not be empty',
    } satisfies Partial<ServiceError>);
    const metrics = await (await fetch(`${t.httpBase}/metrics`)).text();
    expect(metrics).toContain('ratelimit_grpc_errors_total{code="INVALID_ARGUMENT"} 2');
  });
});

describe('wire compatibility with Envoy field numbers (independent encoder)', () => {
  it("decodes requests and encodes responses with Envoy's field numbers and enum values", async () => {
    nextHour();
    const r = await raw.call(
      'edge',
      [
        {
          entries: [
            ['generic_key', 'api'],
            ['user', 'carol'],
          ],
        },
        { entries: [['weekly', 'w']] },
        { entries: [['none', 'x']] },
      ],
      0,
    );
    expect(r.overallCode).toBe(1); // OK
    expect(r.statuses).toHaveLength(3);
    expect(r.statuses[0]).toMatchObject({ code: 1, currentLimit: { name: 'per-user', requestsPerUnit: 2, unit: 1 }, limitRemaining: 1, resetSeconds: 1 });
    expect(r.statuses[1]!.currentLimit).toMatchObject({ requestsPerUnit: 10, unit: 7 }); // WEEK = 7
    expect(r.statuses[2]!.currentLimit).toBeUndefined();
    expect(r.responseHeaders.map(([k]) => k)).toContain('ratelimit-policy');
  });

  it('honours hits_addend as field 3 and UInt64Value presence (0 = check only)', async () => {
    nextHour();
    const d = { entries: [['remote_address', '10.9.9.9']] as [string, string][] };
    expect((await raw.call('edge', [d], 3)).statuses[0]).toMatchObject({ code: 1, limitRemaining: 0 });
    expect((await raw.call('edge', [{ ...d, hitsAddend: 0 }])).statuses[0]).toMatchObject({ code: 1 });
    expect((await raw.call('edge', [d])).overallCode).toBe(2); // OVER_LIMIT
  });

  it('sends dynamic_metadata as a google.protobuf.Struct in field 6', async () => {
    nextHour();
    const r = await raw.call('edge', [{ entries: [['quota', 'raw']] }]);
    expect(r.dynamicMetadata.get('quotaModeEnabled')).toEqual({ field: 4, value: 1 }); // Value.bool_value = 4
    expect(r.dynamicMetadata.get('domain')?.field).toBe(3); // Value.string_value = 3
    expect(Buffer.from(r.dynamicMetadata.get('domain')!.value as Uint8Array).toString()).toBe('edge');
  });

  it('reads the override (field 2) with envoy.type.v3.RateLimitUnit numbers', async () => {
    nextHour();
    const d = { entries: [['remote_address', '10.9.9.10']] as [string, string][], limit: { requestsPerUnit: 7, unit: 3 } }; // HOUR
    expect((await raw.call('edge', [d])).statuses[0]).toMatchObject({ currentLimit: { requestsPerUnit: 7, unit: 3 }, limitRemaining: 6 });
    // An override with unit UNKNOWN (0) is ignored: the configured limit applies.
    const unknownUnit = { entries: [['remote_address', '10.9.9.11']] as [string, string][], limit: { requestsPerUnit: 7, unit: 0 } };
    expect((await raw.call('edge', [unknownUnit])).statuses[0]).toMatchObject({ currentLimit: { requestsPerUnit: 3, unit: 2 }, limitRemaining: 2 });
  });
});

describe('gRPC health', () => {
  it('is SERVING for "", "ratelimit" and the service name; NOT_FOUND for others; Watch streams the status', async () => {
    for (const name of ['', 'ratelimit', 'envoy.service.ratelimit.v3.RateLimitService']) {
      expect((await client.healthCheck(name)).status).toBe('SERVING');
    }
    await expect(client.healthCheck('nope')).rejects.toMatchObject({ code: GrpcStatus.NOT_FOUND });
    const stream = client.healthWatch('');
    stream.on('error', () => {}); // the cancel below ends the stream with CANCELLED
    const first = await new Promise<{ status: string }>((resolve) => stream.once('data', resolve));
    expect(first.status).toBe('SERVING');
    stream.cancel();
  });
});

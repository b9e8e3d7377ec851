/**
 * Bad CheckRequests get a clear gRPC error or a clear answer, never a crash or a hang: garbage bytes, no
 * HTTP attributes, thousands of headers, megabyte values, addresses that are not IPs, pipes, Envoy's
 * raw header_map form, and a seeded stream of mutated requests, after which the service still answers.
 */
import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthzTestClient, authzType, envoyCheckRequest, type HttpRequestSpec } from '../support/authz-client.js';
import { prng } from '../support/prng.js';
import { startTestService, type TestService } from '../support/service.js';

const RULES = {
  'edge.yaml': `domain: edge
authz:
  rate_limits:
    - actions: [{remote_address: {}}]
    - actions: [{request_headers: {header_name: x-user, descriptor_key: user}}]
    - actions: [{cookie: {name: sid}}]
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 1000}
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: sid
    rate_limit: {unit: minute, requests_per_unit: 1}
`,
};

const encode = (obj: Record<string, unknown>) => {
  const type = authzType('CheckRequest');
  return type.encode(type.fromObject(obj)).finish();
};

describe('ext_authz Check: malformed and hostile requests', () => {
  let svc: TestService;
  let client: AuthzTestClient;
  const spec = (s: HttpRequestSpec): HttpRequestSpec => ({ ...s, contextExtensions: { ratelimit_domain: 'edge' } });
  const failure = async (bytes: Uint8Array) => {
    const err = (await client.checkRaw(bytes).then(
      () => undefined,
      (e: unknown) => e,
    )) as ServiceError | undefined;
    expect(err, 'expected a gRPC error').toBeDefined();
    return { code: GrpcStatus[err!.code], details: err!.details };
  };

  beforeAll(async () => {
    svc = await startTestService(RULES);
    client = new AuthzTestClient(svc.grpcAddress);
  });
  afterAll(async () => {
    client.close();
    await svc.close();
  });

  it('garbage bytes and a wrong wire type: INVALID_ARGUMENT naming what is wrong', async () => {
    expect(await failure(Uint8Array.from([0x0a, 0xff, 0xff, 0xff]))).toEqual({
      code: 'INVALID_ARGUMENT',
      details: expect.stringMatching(/^malformed CheckRequest: /) as string,
    });
    expect(await failure(Uint8Array.from([0x08, 0x01]))).toEqual({
      code: 'INVALID_ARGUMENT',
      details: 'malformed CheckRequest: field attributes has wire type 0, expected 2 at top level (byte 0)',
    });
    expect((await failure(Uint8Array.from([0x0f]))).code).toBe('INVALID_ARGUMENT');
  });

  it('no HTTP attributes: INVALID_ARGUMENT', async () => {
    const expected = {
      code: 'INVALID_ARGUMENT',
      details: 'CheckRequest has no attributes.request.http: only HTTP requests (envoy.filters.http.ext_authz) can be checked',
    };
    expect(await failure(new Uint8Array(0))).toEqual(expected);
    expect(await failure(encode({ attributes: { source: { address: { socket_address: { address: '10.0.0.1' } } } } }))).toEqual(expected);
  });

  it('thousands of headers: RESOURCE_EXHAUSTED naming AUTHZ_MAX_HEADERS', async () => {
    const headers = Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`h${i}`, 'v']));
    expect(await failure(encode(envoyCheckRequest(spec({ headers }))))).toEqual({
      code: 'RESOURCE_EXHAUSTED',
      details: 'CheckRequest has more than 256 request headers (AUTHZ_MAX_HEADERS)',
    });
  });

  it('a megabyte header value: RESOURCE_EXHAUSTED (MAX_REQUEST_BYTES); a 5 KB descriptor value is decided (longer than MAX_VALUE_BYTES: counted under its hash)', async () => {
    expect((await failure(encode(envoyCheckRequest(spec({ headers: { 'x-user': 'u'.repeat(1 << 20) } }))))).code).toBe('RESOURCE_EXHAUSTED');
    expect((await client.check(spec({ headers: { 'x-user': 'u'.repeat(5000) } }))).status?.code).toBe(0);
    // A long value in a header no action reads costs nothing.
    expect((await client.check(spec({ headers: { 'x-other': 'o'.repeat(40_000) } }))).status?.code).toBe(0);
  });

  it('a source address that is not an IP: INVALID_ARGUMENT; a pipe peer: the IP descriptors are dropped', async () => {
    // A raw byte that is not UTF-8 is shown as U+FFFD (regression: it made grpc-js fail the call with UNKNOWN).
    const bad = encode(envoyCheckRequest(spec({ ip: '10.9.0.1' })));
    bad[Buffer.from(bad).indexOf('10.9.0.1') + 7] = 0x80;
    expect(await failure(bad)).toEqual({
      code: 'INVALID_ARGUMENT',
      details: "attributes.source.address.socket_address.address: '10.9.0.\ufffd' is not an IP address",
    });
    for (const ip of ['not-an-ip', '999.1.1.1', '10.0.0.1:8080', '::ffff:zz']) {
      expect(await failure(encode(envoyCheckRequest(spec({ ip }))))).toEqual({
        code: 'INVALID_ARGUMENT',
        details: `attributes.source.address.socket_address.address: '${ip}' is not an IP address`,
      });
    }
    const piped = await client.check(spec({ pipe: '/run/envoy.sock', headers: { 'x-user': 'p1' } }));
    expect(piped.status?.code).toBe(0);
    expect(piped.ok_response?.response_headers_to_add.map((h) => h.header.value)).toContain('"edge.user";q=1;w=60');
  });

  it("Envoy's raw header_map (encode_raw_headers): names lowercased, non-UTF-8 bytes kept distinct, repeated cookies joined", async () => {
    const raw = (headers: [string, string][]) => client.check(spec({ ip: '10.3.3.3', rawHeaders: headers }));
    expect(
      (
        await raw([
          ['X-User', 'r1'],
          ['cookie', 'a=1'],
          ['cookie', 'sid=s1'],
        ])
      ).status?.code,
    ).toBe(0);
    expect(
      (
        await raw([
          ['x-user', 'r2'],
          ['cookie', 'sid=s1'],
        ])
      ).status?.code,
    ).not.toBe(0); // sid s1 again
    expect((await raw([['x-user', 'r1']])).status?.code).not.toBe(0); // X-User r1 again
  });

  it('a seeded stream of mutated requests: every call answered or refused with a clear code; the service lives', async () => {
    const rnd = prng('authz-fuzz-1');
    const valid = encode(envoyCheckRequest(spec({ ip: '10.9.0.1', headers: { 'x-user': 'fz', cookie: 'sid=1' }, path: '/a?b=c' })));
    const codes = new Map<string, number>();
    for (let i = 0; i < 300; i++) {
      const bytes = Uint8Array.from(valid);
      const edits = rnd.int(1, 4);
      for (let e = 0; e < edits; e++) bytes[rnd.int(0, bytes.length - 1)] = rnd.int(0, 255);
      const cut = rnd.chance(0.2) ? bytes.subarray(0, rnd.int(0, bytes.length)) : bytes;
      const code = await client.checkRaw(cut).then(
        () => 'answered',
        (e: ServiceError) => GrpcStatus[e.code],
      );
      codes.set(code, (codes.get(code) ?? 0) + 1);
    }
    expect(
      [...codes.keys()].every((c) => ['answered', 'INVALID_ARGUMENT', 'RESOURCE_EXHAUSTED'].includes(c)),
      JSON.stringify([...codes]),
    ).toBe(true);
    expect(codes.get('INVALID_ARGUMENT') ?? 0).toBeGreaterThan(0);
    expect((await client.check(spec({ ip: '10.9.9.9' }))).status?.code).toBe(0);
  });
});

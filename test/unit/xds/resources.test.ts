/**
 * RateLimitConfig resources as rules files (src/xds/resources.ts): every field of the proto (field numbers of
 * go-control-plane/ratelimit's rls_conf.pb.go, written here by hand, independently of the decoder), the units by
 * number (WEEK is 7), and what the compiler then makes of the file; malformed resources are errors, never throws.
 */
import { describe, expect, it } from 'vitest';
import { compileConfigFiles } from '../../../src/config/compile/compile.js';
import { decodeDiscoveryResponse, encodeDiscoveryRequest, RATE_LIMIT_CONFIG_TYPE } from '../../../src/xds/discovery-messages.js';
import { resourcesToFiles } from '../../../src/xds/resources.js';
import { ProtoReader } from '../../../src/protobuf/reader.js';
import protobuf from 'protobufjs';

/** A message built field by field with protobufjs's writer (empty strings and zeros left out, as proto3 does). */
class ProtoWriter {
  private readonly w = protobuf.Writer.create();
  string(field: number, value: string): this {
    if (value !== '') this.w.uint32(field * 8 + 2).string(value);
    return this;
  }
  bytes(field: number, value: Uint8Array): this {
    this.w.uint32(field * 8 + 2).bytes(value);
    return this;
  }
  int(field: number, value: number): this {
    if (value !== 0) this.w.uint32(field * 8).uint32(value);
    return this;
  }
  finish(): Buffer {
    return Buffer.from(this.w.finish());
  }
}

const UNBOUNDED = { maxResourceBytes: Number.MAX_SAFE_INTEGER };

const w = () => new ProtoWriter();
const policy = (unit: number, rpu: number, extra: (p: ProtoWriter) => ProtoWriter = (p) => p) => extra(w().int(1, unit).int(2, rpu)).finish();
const descriptor = (key: string, value: string, build: (d: ProtoWriter) => ProtoWriter = (d) => d) => build(w().string(1, key).string(2, value)).finish();
const config = (name: string, domain: string, ...descriptors: Buffer[]) => {
  const c = w().string(1, name).string(2, domain);
  for (const d of descriptors) c.bytes(3, d);
  return c.finish();
};
const any = (value: Uint8Array, typeUrl = RATE_LIMIT_CONFIG_TYPE) => ({ typeUrl, value });
/** google.protobuf.Struct {tier: "gold", weight: 2.5, on: true, list: ["a"]} */
const struct = () => {
  const entry = (k: string, v: Buffer) => w().string(1, k).bytes(2, v).finish();
  const dbl = Buffer.alloc(9);
  dbl[0] = (2 << 3) | 1;
  dbl.writeDoubleLE(2.5, 1);
  return w()
    .bytes(1, entry('tier', w().string(3, 'gold').finish()))
    .bytes(1, entry('weight', dbl))
    .bytes(1, entry('on', w().int(4, 1).finish()))
    .bytes(
      1,
      entry(
        'list',
        w()
          .bytes(6, w().bytes(1, w().string(3, 'a').finish()).finish())
          .finish(),
      ),
    )
    .finish();
};

describe('RateLimitConfig resources', () => {
  it('reads every field into a rules file that compiles as the YAML would', () => {
    const res = config(
      'eg/policy',
      'listener-a',
      descriptor('generic_key', 'route-a', (d) =>
        d
          .bytes(
            3,
            policy(7, 10, (p) => p.string(4, 'weekly').bytes(5, w().string(1, 'other').finish())),
          )
          .int(5, 1)
          .int(6, 1)
          .int(7, 1)
          .bytes(8, struct()),
      ),
      descriptor('rule-0-match-0', '', (d) =>
        d.bytes(
          4,
          descriptor('masked_remote_address', '10.0.0.0/8', (c) => c.bytes(3, policy(1, 5))),
        ),
      ),
      descriptor('open', '', (d) => d.bytes(3, w().int(3, 1).finish())),
      descriptor('other', '', (d) =>
        d.bytes(
          3,
          policy(2, 3, (p) => p.string(4, 'other')),
        ),
      ),
    );
    const { files, errors } = resourcesToFiles([any(res)], UNBOUNDED);
    expect(errors).toEqual([]);
    expect(files.map((f) => f.name)).toEqual(['xds:eg/policy']);
    expect(JSON.parse(files[0]!.text)).toEqual({
      domain: 'listener-a',
      descriptors: [
        {
          key: 'generic_key',
          value: 'route-a',
          rate_limit: { unit: 'week', requests_per_unit: 10, name: 'weekly', replaces: [{ name: 'other' }], count_every_hit: true },
          shadow_mode: true,
          detailed_metric: true,
          quota_mode: true,
          metadata: { tier: 'gold', weight: 2.5, on: true, list: ['a'] },
        },
        {
          key: 'rule-0-match-0',
          descriptors: [{ key: 'masked_remote_address', value: '10.0.0.0/8', rate_limit: { unit: 'second', requests_per_unit: 5, count_every_hit: true } }],
        },
        { key: 'open', rate_limit: { unlimited: true } },
        { key: 'other', rate_limit: { unit: 'minute', requests_per_unit: 3, name: 'other', count_every_hit: true } },
      ],
    });
    const compiled = compileConfigFiles(files, { mergeDomains: false });
    expect(compiled.ok).toBe(true);
    if (compiled.ok) expect([...compiled.config.domains.keys()]).toEqual(['listener-a']);
  });

  it('every limit from xDS counts every charge (count_every_hit), even one that crosses the limit, as envoyproxy/ratelimit counts', () => {
    const { files } = resourcesToFiles(
      [
        any(
          config(
            'p',
            'd',
            descriptor('k', '', (d) => d.bytes(3, policy(2, 10))),
          ),
        ),
      ],
      UNBOUNDED,
    );
    const compiled = compileConfigFiles(files, { mergeDomains: false });
    expect(compiled.ok).toBe(true);
    if (compiled.ok)
      expect((compiled.config.describe() as { rules: { limits: unknown[] }[] }[])[0]!.rules[0]!.limits).toEqual([
        expect.objectContaining({ requests_per_unit: 10, count_every_hit: true }),
      ]);
  });

  it('a limit without a unit (UNKNOWN) is refused by the compiler with the resource, line and field', () => {
    const { files } = resourcesToFiles(
      [
        any(
          config(
            'p',
            'd',
            descriptor('k', '', (d) => d.bytes(3, policy(0, 5))),
          ),
        ),
      ],
      UNBOUNDED,
    );
    const compiled = compileConfigFiles(files, { mergeDomains: false });
    expect(compiled.ok).toBe(false);
    if (!compiled.ok)
      expect(compiled.errors.map(String)).toEqual([expect.stringMatching(/^xds:p:\d+:\d+: descriptors\[0\]\.rate_limit\.unit: missing rate limit unit/)]);
  });

  it('names resources apart (a repeated name gets #2) and refuses other types and malformed bytes without throwing', () => {
    const ok = config('same', 'a');
    const out = resourcesToFiles(
      [any(ok), any(config('same', 'b')), any(ok, 'type.googleapis.com/envoy.config.cluster.v3.Cluster'), any(Buffer.from([0x1a, 0x05, 0x0a]))],
      UNBOUNDED,
    );
    expect(out.files.map((f) => f.name)).toEqual(['xds:same', 'xds:same#2']);
    expect(out.errors).toEqual([
      'resources[2]: type type.googleapis.com/envoy.config.cluster.v3.Cluster is not type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig',
      expect.stringMatching(/^resources\[3\]: malformed RateLimitConfig: length past the end/),
    ]);
  });

  it('bounds the nesting of descriptors and metadata', () => {
    let d = descriptor('k', '');
    for (let i = 0; i < 80; i++) d = descriptor('k', '', (x) => x.bytes(4, d));
    expect(resourcesToFiles([any(config('deep', 'd', d))], UNBOUNDED).errors).toEqual([expect.stringContaining('nested deeper than 64')]);
  });
});

describe('DiscoveryRequest / DiscoveryResponse', () => {
  it("encodes a NACK with node, metadata, version, nonce and error_detail at Envoy's field numbers", () => {
    const bytes = encodeDiscoveryRequest({
      versionInfo: '2',
      responseNonce: 'n3',
      typeUrl: RATE_LIMIT_CONFIG_TYPE,
      errorDetail: 'bad',
      node: { id: 'envoy-ratelimit', metadata: new Map([['zone', 'z1']]), userAgentName: 'ua', userAgentVersion: '1' },
    });
    const fields: Record<number, string> = {};
    const r = new ProtoReader(bytes, 'DiscoveryRequest');
    while (r.next()) fields[r.number] = r.number === 2 || r.number === 6 ? Buffer.from(r.bytes('x')).toString('hex') : r.utf8('x');
    expect([fields[1], fields[4], fields[5]]).toEqual(['2', RATE_LIMIT_CONFIG_TYPE, 'n3']);
    const status = new ProtoReader(Buffer.from(fields[6]!, 'hex'), 'Status');
    const st: unknown[] = [];
    while (status.next()) st.push(status.number === 1 ? status.uint('code') : status.utf8('message'));
    expect(st).toEqual([3, 'bad']);
    expect(Buffer.from(fields[2]!, 'hex').toString('latin1')).toContain('envoy-ratelimit');
  });

  it('decodes a response and refuses a truncated one', () => {
    const resp = w()
      .string(1, '7')
      .bytes(2, w().string(1, RATE_LIMIT_CONFIG_TYPE).bytes(2, config('n', 'd')).finish())
      .string(4, RATE_LIMIT_CONFIG_TYPE)
      .string(5, 'nonce-1')
      .finish();
    const d = decodeDiscoveryResponse(resp);
    expect([d.versionInfo, d.typeUrl, d.nonce, d.resources.length]).toEqual(['7', RATE_LIMIT_CONFIG_TYPE, 'nonce-1', 1]);
    expect(() => decodeDiscoveryResponse(resp.subarray(0, resp.length - 3))).toThrow(/malformed DiscoveryResponse/);
  });
});

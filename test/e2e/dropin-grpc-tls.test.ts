/**
 * gRPC TLS with envoyproxy/ratelimit's names, as Envoy Gateway sets them: GRPC_SERVER_USE_TLS=true with
 * GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY serves TLS; GRPC_CLIENT_TLS_CACERT requires client certificates;
 * GRPC_SERVER_TLS_CA_CERT (set by Envoy Gateway, read by no reference code) changes nothing, as there;
 * GRPC_CLIENT_TLS_SAN requires that name among the client certificate's subject alternative names.
 */
import * as grpc from '@grpc/grpc-js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RlsTestClient } from '../support/rls-client.js';
import { spawnService } from '../support/service-process.js';
import { makeTestPki, type TestPki } from '../support/tls.js';

let pki: TestPki;
let rules: string;
beforeAll(async () => {
  pki = await makeTestPki();
  rules = mkdtempSync(join(tmpdir(), 'rl-dropin-tls-'));
  writeFileSync(join(rules, 'edge.yaml'), 'domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {unit: minute, requests_per_unit: 1000}\n');
});
afterAll(() => {
  pki?.remove();
  if (rules !== undefined) rmSync(rules, { recursive: true, force: true });
});

async function outcome(address: string, withCert: boolean, from: TestPki = pki): Promise<string> {
  const creds = grpc.credentials.createSsl(
    readFileSync(from.caCert),
    withCert ? readFileSync(from.clientKey) : null,
    withCert ? readFileSync(from.clientCert) : null,
  );
  const client = new RlsTestClient(address, creds, { 'grpc.ssl_target_name_override': pki.serverName, 'grpc.default_authority': pki.serverName });
  try {
    return (await client.shouldRateLimit({ domain: 'edge', descriptors: [{ entries: [{ key: 'ip', value: 'x' }] }] }, 3000)).overall_code;
  } catch (err) {
    return grpc.status[(err as grpc.ServiceError).code] ?? 'ERROR';
  } finally {
    client.close();
  }
}

describe("GRPC_SERVER_USE_TLS and its files (the reference's names)", () => {
  it('serves TLS, requires client certificates only with GRPC_CLIENT_TLS_CACERT, and ignores GRPC_SERVER_TLS_CA_CERT', async () => {
    const tls = { CONFIG_DIR: rules, GRPC_SERVER_USE_TLS: 'true', GRPC_SERVER_TLS_CERT: pki.serverCert, GRPC_SERVER_TLS_KEY: pki.serverKey };
    const plain = await spawnService({ ...tls, GRPC_SERVER_TLS_CA_CERT: pki.caCert });
    const mutual = await spawnService({ ...tls, GRPC_CLIENT_TLS_CACERT: pki.caCert });
    try {
      expect([await outcome(plain.grpcAddress, false), await outcome(plain.grpcAddress, true)]).toEqual(['OK', 'OK']);
      expect(await outcome(mutual.grpcAddress, true)).toBe('OK');
      expect(await outcome(mutual.grpcAddress, false)).toBe('UNAVAILABLE');
    } finally {
      await plain.stop();
      await mutual.stop();
    }
  }, 40_000);

  it('checks the subject alternative name of client certificates with GRPC_CLIENT_TLS_SAN, as the reference does', async () => {
    const named = await makeTestPki('DNS:envoy.example, DNS:*.mesh.example');
    try {
      const tls = { CONFIG_DIR: rules, GRPC_SERVER_USE_TLS: 'true', GRPC_SERVER_TLS_CERT: named.serverCert, GRPC_SERVER_TLS_KEY: named.serverKey };
      const exact = await spawnService({ ...tls, GRPC_CLIENT_TLS_CACERT: named.caCert, GRPC_CLIENT_TLS_SAN: 'envoy.example' });
      const wildcard = await spawnService({ ...tls, GRPC_CLIENT_TLS_CACERT: named.caCert, GRPC_CLIENT_TLS_SAN: 'gw.mesh.example' });
      const other = await spawnService({ ...tls, GRPC_CLIENT_TLS_CACERT: named.caCert, GRPC_CLIENT_TLS_SAN: 'other.example' });
      try {
        expect(await outcome(exact.grpcAddress, true, named)).toBe('OK');
        expect(await outcome(wildcard.grpcAddress, true, named)).toBe('OK');
        expect(await outcome(other.grpcAddress, true, named)).toBe('UNAVAILABLE');
        expect(other.stderr()).toContain('GRPC_TLS_CLIENT_SAN not matched');
        // a certificate with no subject alternative name at all (the default PKI's client) is refused too
        const bare = await spawnService({
          ...tls,
          GRPC_SERVER_TLS_CERT: pki.serverCert,
          GRPC_SERVER_TLS_KEY: pki.serverKey,
          GRPC_CLIENT_TLS_CACERT: pki.caCert,
          GRPC_CLIENT_TLS_SAN: 'ratelimit',
        });
        try {
          expect(await outcome(bare.grpcAddress, true)).toBe('UNAVAILABLE');
        } finally {
          await bare.stop();
        }
      } finally {
        await Promise.all([exact.stop(), wildcard.stop(), other.stop()]);
      }
    } finally {
      named.remove();
    }
  }, 60_000);
});

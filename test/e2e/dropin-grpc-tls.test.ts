/**
 * gRPC TLS with envoyproxy/ratelimit's names, as Envoy Gateway sets them: GRPC_SERVER_USE_TLS=true with
 * GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY serves TLS; GRPC_CLIENT_TLS_CACERT requires client certificates;
 * GRPC_SERVER_TLS_CA_CERT (set by Envoy Gateway, read by no reference code) changes nothing, as there.
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

async function outcome(address: string, withCert: boolean): Promise<string> {
  const creds = grpc.credentials.createSsl(
    readFileSync(pki.caCert),
    withCert ? readFileSync(pki.clientKey) : null,
    withCert ? readFileSync(pki.clientCert) : null,
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
});

/**
 * TLS to a real redis-server (built with TLS): the server certificate is verified against REDIS_TLS_CA and
 * the server name, verification can be skipped on request, and mutual TLS sends the client certificate.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { counterKey } from '../../../src/vocab/keys.js';
import { createRedisStore, type RedisStoreOptions } from '../../../src/storage/redis/redis-store.js';
import { freePort, RedisProcess } from '../../support/redis.js';
import { makeTestPki, type TestPki } from '../../support/tls.js';

const key = counterKey('rl:tls:', 'd', [{ key: 'k', value: String(process.pid) }], 'fixed_window', 60_000);
const check = { key, algorithm: 'fixed_window' as const, limit: 10, windowMs: 60_000, burst: 1, hits: 1, enforce: true };

/** Whether a store with these options gets ready (and then counts), or reports a connection error first. */
async function connects(options: RedisStoreOptions): Promise<boolean> {
  let failed!: () => void;
  const error = new Promise<void>((resolve) => (failed = resolve));
  const store = createRedisStore({
    ...options,
    connectTimeoutMs: 1000,
    log: (m) => {
      if (m.includes('error')) failed();
    },
  });
  try {
    const ready = await Promise.race([store.waitUntilReady(3000).then(() => true), error.then(() => false)]);
    if (ready) {
      const [o] = await store.apply([check], Date.now());
      expect(o!.allowed).toBe(true);
    }
    return ready;
  } finally {
    await store.close();
  }
}

describe('Redis over TLS', () => {
  let pki: TestPki;
  let server: RedisProcess;
  let mtls: RedisProcess;
  let tlsPort: number;
  let mtlsPort: number;
  beforeAll(async () => {
    pki = await makeTestPki();
    const tlsArgs = (port: number, authClients: string): string[] => [
      '--tls-port',
      String(port),
      '--tls-cert-file',
      pki.serverCert,
      '--tls-key-file',
      pki.serverKey,
      '--tls-ca-cert-file',
      pki.caCert,
      '--tls-auth-clients',
      authClients,
    ];
    tlsPort = await freePort();
    mtlsPort = await freePort();
    server = new RedisProcess(await freePort(), tlsArgs(tlsPort, 'no'));
    mtls = new RedisProcess(await freePort(), tlsArgs(mtlsPort, 'yes'));
    await Promise.all([server.start(), mtls.start()]);
  });
  afterAll(async () => {
    await Promise.all([server?.destroy(), mtls?.destroy()]);
    pki?.remove();
  });

  it('verifies the server against the CA and the server name', async () => {
    expect(await connects({ url: `rediss://127.0.0.1:${tlsPort}`, tls: { caFile: pki.caCert, servername: pki.serverName } })).toBe(true);
    // the certificate names redis.test, not 127.0.0.1
    expect(await connects({ url: `rediss://127.0.0.1:${tlsPort}`, tls: { caFile: pki.caCert } })).toBe(false);
    // an unknown CA
    expect(await connects({ url: `rediss://127.0.0.1:${tlsPort}`, tls: { servername: pki.serverName } })).toBe(false);
  });

  it('REDIS_TLS_SKIP_HOSTNAME_VERIFICATION: verifies the chain, not the name', async () => {
    // the certificate names redis.test, not 127.0.0.1: accepted, as it chains to the CA
    expect(await connects({ url: `rediss://127.0.0.1:${tlsPort}`, tls: { caFile: pki.caCert, skipHostnameVerification: true } })).toBe(true);
    // a CA it does not chain to is still refused
    const stranger = await makeTestPki();
    try {
      expect(await connects({ url: `rediss://127.0.0.1:${tlsPort}`, tls: { caFile: stranger.caCert, skipHostnameVerification: true } })).toBe(false);
    } finally {
      stranger.remove();
    }
  });

  it('skips verification only when asked', async () => {
    expect(await connects({ url: `rediss://127.0.0.1:${tlsPort}`, tls: { insecureSkipVerify: true } })).toBe(true);
  });

  it('mutual TLS: sends the client certificate', async () => {
    const base = { url: `rediss://127.0.0.1:${mtlsPort}`, tls: { caFile: pki.caCert, servername: pki.serverName } };
    expect(await connects(base)).toBe(false);
    expect(await connects({ ...base, tls: { ...base.tls, certFile: pki.clientCert, keyFile: pki.clientKey } })).toBe(true);
  });
});

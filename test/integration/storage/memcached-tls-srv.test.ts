/**
 * The memcached store as the settings build it (app/store-factory.ts) on real memcached servers: TLS (memcached
 * -Z with a certificate for `redis.test` only: verified against MEMCACHE_TLS_CACERT, the name check skipped only
 * with MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION, a client certificate sent when the server requires one), and
 * MEMCACHE_SRV through an injected resolver (node:dns answers SRV only from a DNS server; the resolver is the one
 * seam, the servers behind it are real), re-read every MEMCACHE_SRV_REFRESH.
 */
import type { SrvRecord } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildStore } from '../../../src/app/store-factory.js';
import { createLogger } from '../../../src/observability/log.js';
import { createMetrics } from '../../../src/observability/metrics.js';
import type { Settings } from '../../../src/settings/settings.js';
import type { CounterStore, LimitCheck } from '../../../src/storage/counter-store.js';
import { systemClock } from '../../../src/vocab/clock.js';
import { counterKey } from '../../../src/vocab/keys.js';
import { StartupError } from '../../../src/vocab/startup-error.js';
import { eventually } from '../../support/eventually.js';
import { memcachedCommand, startMemcached, type MemcachedProcess } from '../../support/memcached.js';
import { testSettings } from '../../support/service.js';
import { makeTestPki, type TestPki } from '../../support/tls.js';

const log = createLogger({ level: 'error', format: 'text', write: () => {} });
const key = (value: string) => counterKey('rl:', 'd', [{ key: 'k', value: `${value}-${process.pid}` }], 'fixed_window', 60_000);
const check = (value: string, limit = 10): LimitCheck => ({
  key: key(value),
  algorithm: 'fixed_window',
  limit,
  windowMs: 60_000,
  burst: 1,
  hits: 1,
  enforce: true,
});

function build(overrides: Partial<Settings>, resolveSrv?: (name: string) => Promise<SrvRecord[]>): Promise<CounterStore> {
  // FAILURE_MODE=closed: an answer the store could not give shows as storeFailure.
  const settings = testSettings({ backend: 'memcached', failureMode: 'closed', localCacheSize: 0, ...overrides });
  return buildStore(settings, { clock: systemClock, log, metrics: createMetrics({ defaultMetrics: false }), ...(resolveSrv ? { resolveSrv } : {}) });
}

async function decides(store: CounterStore): Promise<boolean> {
  const [o] = await store.apply([check(`tls-${Math.random()}`)], Date.now(), { deadlineMs: Date.now() + 1000 });
  return o!.storeFailure !== true;
}

describe('memcached over TLS', () => {
  let pki: TestPki;
  let tls: MemcachedProcess;
  let mutual: MemcachedProcess;
  beforeAll(async () => {
    pki = await makeTestPki();
    const ssl = ['-Z', '-o', `ssl_chain_cert=${pki.serverCert},ssl_key=${pki.serverKey}`];
    tls = await startMemcached(ssl);
    mutual = await startMemcached(['-Z', '-o', `ssl_chain_cert=${pki.serverCert},ssl_key=${pki.serverKey},ssl_ca_cert=${pki.caCert},ssl_verify_mode=2`]);
  }, 30_000);
  afterAll(async () => {
    await tls?.stop();
    await mutual?.stop();
    pki?.remove();
  });

  const base = () => ({ memcacheTls: true, memcacheTlsCacert: pki.caCert, memcacheConnectTimeoutMs: 1000 });

  it('verifies the name in the certificate unless told not to; the chain always', async () => {
    const strict = await build({ ...base(), memcacheHostPort: [tls.address] });
    expect(await decides(strict)).toBe(false); // the certificate is for redis.test, not 127.0.0.1
    expect(strict.health?.().problem).toMatch(/IP: 127\.0\.0\.1 is not in the cert's list|altnames/i);
    await strict.close();
    const skip = await build({ ...base(), memcacheHostPort: [tls.address], memcacheTlsSkipHostnameVerification: true });
    expect(await decides(skip)).toBe(true);
    await skip.close();
    const untrusted = await build({ memcacheTls: true, memcacheHostPort: [tls.address], memcacheTlsSkipHostnameVerification: true });
    expect(await decides(untrusted)).toBe(false); // no CA given: the system CAs do not trust the test CA
    await untrusted.close();
  });

  it('sends the client certificate to a server that requires one', async () => {
    const without = await build({ ...base(), memcacheHostPort: [mutual.address], memcacheTlsSkipHostnameVerification: true });
    expect(await decides(without)).toBe(false);
    await without.close();
    const withCert = await build({
      ...base(),
      memcacheHostPort: [mutual.address],
      memcacheTlsSkipHostnameVerification: true,
      memcacheTlsClientCert: pki.clientCert,
      memcacheTlsClientKey: pki.clientKey,
    });
    expect(await decides(withCert)).toBe(true);
    await withCert.close();
  });

  it('refuses a client certificate without its key, naming both settings', async () => {
    await expect(build({ ...base(), memcacheHostPort: [tls.address], memcacheTlsClientCert: pki.clientCert })).rejects.toThrow(
      'MEMCACHE_TLS_CLIENT_CERT and MEMCACHE_TLS_CLIENT_KEY go together',
    );
  });
});

describe('MEMCACHE_SRV', () => {
  let a: MemcachedProcess;
  let b: MemcachedProcess;
  beforeAll(async () => {
    [a, b] = await Promise.all([startMemcached(), startMemcached()]);
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
  });

  it('reads the servers from the record at start and again every MEMCACHE_SRV_REFRESH', async () => {
    let records: SrvRecord[] = [{ name: '127.0.0.1', port: a.port, priority: 0, weight: 0 }];
    const asked: string[] = [];
    const store = await build({ memcacheSrv: '_memcache._tcp.mc.test', memcacheSrvRefreshMs: 50 }, (name) => {
      asked.push(name);
      return Promise.resolve(records);
    });
    try {
      expect(asked[0]).toBe('_memcache._tcp.mc.test');
      const first = check('srv-a');
      await store.apply([first], Date.now());
      const item = (p: number) => memcachedCommand(p, `get ${first.key}:${Date.now() - (Date.now() % 60_000)}\r\n`);
      expect(await item(a.port)).toMatch(/^VALUE /);
      records = [{ name: '127.0.0.1', port: b.port, priority: 0, weight: 0 }];
      const second = check('srv-b');
      await eventually(
        async () => {
          await store.apply([second], Date.now());
          return (await memcachedCommand(b.port, `get ${second.key}:${Date.now() - (Date.now() % 60_000)}\r\n`)).startsWith('VALUE ');
        },
        { what: 'the refreshed record to move the counters to the second server', timeoutMs: 5_000, intervalMs: 20 },
      );
    } finally {
      await store.close();
    }
  });

  it('stops the start when the record cannot be read, naming it', async () => {
    const error = await build({ memcacheSrv: '_memcache._tcp.nowhere.test' }, () => Promise.reject(new Error('queryNotFound ENOTFOUND'))).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StartupError);
    expect((error as Error).message).toBe('MEMCACHE_SRV _memcache._tcp.nowhere.test: cannot read the memcached servers: queryNotFound ENOTFOUND');
    await expect(build({ memcacheSrv: 'memcached.test' }, () => Promise.resolve([]))).rejects.toThrow(/is not an SRV name such as _memcache\._tcp\./);
  });
});

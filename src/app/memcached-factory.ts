/**
 * Builds the memcached counter store (BACKEND=memcached) from the settings: the servers (MEMCACHE_HOST_PORT,
 * or MEMCACHE_SRV resolved now and every MEMCACHE_SRV_REFRESH), TLS (MEMCACHE_TLS*), and a first `version`
 * to every server within MEMCACHE_CONNECT_TIMEOUT_MS. A memcached that does not answer yet does not stop the
 * start: FAILURE_MODE answers until it does. Part of the composition root.
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import type { Logger } from '../observability/log.js';
import type { Settings } from '../settings/settings.js';
import { MemcachedClient, parseServer } from '../storage/memcached/memcached-client.js';
import { MemcachedStore } from '../storage/memcached/memcached-store.js';
import { refreshSrv, serversFromSrv, type SrvResolver } from '../storage/memcached/srv.js';
import type { Clock } from '../vocab/clock.js';
import { StartupError } from '../vocab/startup-error.js';
import { throttledLog } from '../storage/throttled-log.js';

export interface MemcachedDeps {
  readonly clock: Clock;
  readonly log: Logger;
  /** Resolves MEMCACHE_SRV (default: DNS). */
  readonly resolveSrv?: SrvResolver;
}

export async function buildMemcachedStore(settings: Settings, deps: MemcachedDeps): Promise<MemcachedStore> {
  const { log, clock } = deps;
  let servers: string[];
  if (settings.memcacheSrv !== '') {
    try {
      servers = await serversFromSrv(settings.memcacheSrv, deps.resolveSrv);
    } catch (error) {
      throw new StartupError(`MEMCACHE_SRV ${settings.memcacheSrv}: cannot read the memcached servers: ${(error as Error).message}`);
    }
  } else {
    servers = settings.memcacheHostPort;
    for (const s of servers) {
      try {
        parseServer(s);
      } catch (error) {
        throw new StartupError(`MEMCACHE_HOST_PORT: ${(error as Error).message}`);
      }
    }
  }
  const warn = throttledLog({ log: (message) => log.warn(message), clock, intervalMs: 5_000 });
  const client = new MemcachedClient({
    servers,
    connectionsPerServer: settings.memcacheMaxIdleConns,
    ...(settings.memcacheTls ? { tls: tlsOptions(settings) } : {}),
    connectTimeoutMs: settings.memcacheConnectTimeoutMs,
    // A backstop for a server that stopped answering: every decision has its own, shorter, deadline.
    replyTimeoutMs: Math.max(settings.decisionMaxWaitMs, settings.redisCommandTimeoutMs) + 1000,
    onError: (message) => warn(`memcached: ${message}`),
  });
  const stopRefresh =
    settings.memcacheSrv !== '' && settings.memcacheSrvRefreshMs > 0
      ? refreshSrv(
          settings.memcacheSrv,
          settings.memcacheSrvRefreshMs,
          (list) => {
            log.info('memcached servers changed (MEMCACHE_SRV)', { servers: list });
            client.setServers(list);
          },
          { current: () => client.serverList, onError: (message) => warn(message), ...(deps.resolveSrv ? { resolve: deps.resolveSrv } : {}) },
        )
      : undefined;
  const store = new MemcachedStore({ client, keyPrefix: settings.cacheKeyPrefix, ...(stopRefresh ? { onClose: stopRefresh } : {}) });
  try {
    await store.waitUntilReady(settings.memcacheConnectTimeoutMs);
    log.info('connected to memcached', { servers });
  } catch (error) {
    log.error(`memcached cannot decide yet; answering by FAILURE_MODE=${settings.failureMode} until it can`, { servers, error: (error as Error).message });
  }
  return store;
}

function tlsOptions(settings: Settings): ConnectionOptions {
  const read = (name: string, file: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (error) {
      throw new StartupError(`${name}: cannot read ${file}: ${(error as Error).message}`);
    }
  };
  const out: ConnectionOptions = {};
  if (settings.memcacheTlsCacert !== '') out.ca = read('MEMCACHE_TLS_CACERT', settings.memcacheTlsCacert);
  if ((settings.memcacheTlsClientCert !== '') !== (settings.memcacheTlsClientKey !== '')) {
    throw new StartupError('MEMCACHE_TLS_CLIENT_CERT and MEMCACHE_TLS_CLIENT_KEY go together: set both (mutual TLS) or neither');
  }
  if (settings.memcacheTlsClientCert !== '') {
    out.cert = read('MEMCACHE_TLS_CLIENT_CERT', settings.memcacheTlsClientCert);
    out.key = read('MEMCACHE_TLS_CLIENT_KEY', settings.memcacheTlsClientKey);
  }
  // The chain is still verified against the trusted CAs; only the name in the certificate is not checked.
  if (settings.memcacheTlsSkipHostnameVerification) out.checkServerIdentity = () => undefined;
  return out;
}

/**
 * The settings of the memcached store (BACKEND=memcached), with envoyproxy/ratelimit's names and meanings (its
 * MEMCACHE_* settings). Spread into SETTINGS (settings.ts); docs/memcached.md explains them.
 */
import { bool, parseGoDuration, spec } from './xds-settings.js';

const str = (env: string, description: string) => spec(env, 'string', '', description, (s) => s.trim());

function int(env: string, def: number, description: string, min: number) {
  return spec(env, `integer ≥ ${min}`, def, description, (s) => {
    if (!/^\d+$/.test(s.trim())) throw new Error(`'${s}' is not a whole number`);
    const n = Number(s.trim());
    if (n < min || n > 1_000_000) throw new Error(`${n} is out of range ${min}..1000000`);
    return n;
  });
}

export const MEMCACHED_SETTINGS = {
  memcacheHostPort: spec(
    'MEMCACHE_HOST_PORT',
    'comma-separated list',
    [] as string[],
    'BACKEND=memcached: host:port of each memcached server; a key is kept on the server its CRC-32 picks in this order (as envoyproxy/ratelimit picks it: give both the same list).',
    (s) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== ''),
  ),
  memcacheSrv: str('MEMCACHE_SRV', 'BACKEND=memcached: the servers from this DNS SRV record (`_service._proto.name`) instead of MEMCACHE_HOST_PORT.'),
  memcacheSrvRefreshMs: {
    ...spec(
      'MEMCACHE_SRV_REFRESH',
      'duration (500ms, 10s, 1m)',
      0,
      'Re-read MEMCACHE_SRV this often (0s: only at start); a failed lookup keeps the servers in use.',
      parseGoDuration,
    ),
    shown: '0s',
  },
  memcacheMaxIdleConns: int('MEMCACHE_MAX_IDLE_CONNS', 2, 'Pipelined connections kept open to each memcached server.', 1),
  memcacheKeyFormat: spec<'native' | 'envoy'>(
    'MEMCACHE_KEY_FORMAT',
    'native \\| envoy',
    'native',
    "envoy: fixed_window limits with a unit use envoyproxy/ratelimit's memcached keys, so a rolling update from it keeps the counts (docs/memcached.md).",
    (s) => {
      const v = s.trim().toLowerCase();
      if (v !== 'native' && v !== 'envoy') throw new Error(`'${s}' is not one of native, envoy`);
      return v;
    },
  ),
  memcacheConnectTimeoutMs: int(
    'MEMCACHE_CONNECT_TIMEOUT_MS',
    500,
    'memcached connect timeout (TLS handshake included); a failed server is dialled again after 100 ms.',
    1,
  ),
  memcacheTls: bool('MEMCACHE_TLS', false, 'Reach memcached over TLS.'),
  memcacheTlsCacert: str('MEMCACHE_TLS_CACERT', 'TLS: file with the CA certificate(s) to trust (default: the system CAs).'),
  memcacheTlsClientCert: str('MEMCACHE_TLS_CLIENT_CERT', 'TLS: client certificate file (mutual TLS), with MEMCACHE_TLS_CLIENT_KEY.'),
  memcacheTlsClientKey: str('MEMCACHE_TLS_CLIENT_KEY', 'TLS: client key file (mutual TLS).'),
  memcacheTlsSkipHostnameVerification: bool(
    'MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION',
    false,
    "TLS: check that the server's certificate chains to a trusted CA, but not the name in it.",
  ),
};

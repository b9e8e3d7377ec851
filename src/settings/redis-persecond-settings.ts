/**
 * The per-second Redis (REDIS_PERSECOND=true), with envoyproxy/ratelimit's names and meanings: limits whose
 * window is one second are counted in a Redis of their own (storage/per-second/). Its URL takes our form
 * (`redis://`, `rediss://`) or the reference's (`host:port`; `master,host:port,...` with Sentinel;
 * `host:port,...` with Cluster). TLS files and timeouts are the main Redis's (REDIS_TLS_*, REDIS_*_TIMEOUT_MS),
 * as the reference shares its REDIS_TLS_* files. Spread into SETTINGS (settings.ts); docs/redis.md explains them.
 */
import { bool, spec } from './xds-settings.js';

const str = (env: string, def: string, description: string) => spec(env, 'string', def, description, (s) => s.trim());

export const REDIS_PERSECOND_SETTINGS = {
  redisPerSecond: bool(
    'REDIS_PERSECOND',
    false,
    'BACKEND=redis: count the limits whose window is one second (unit: second) in a Redis of their own (REDIS_PERSECOND_URL).',
  ),
  redisPerSecondUrl: str(
    'REDIS_PERSECOND_URL',
    '',
    "The per-second Redis: redis:// or rediss:// as REDIS_URL, or the reference's host:port (Sentinel: master,host:port,...; Cluster: host:port,...).",
  ),
  redisPerSecondType: spec<'single' | 'sentinel' | 'cluster'>(
    'REDIS_PERSECOND_TYPE',
    'single \\| sentinel \\| cluster',
    'single',
    'Topology of the per-second Redis.',
    (s) => {
      const v = s.trim().toLowerCase();
      if (v !== 'single' && v !== 'sentinel' && v !== 'cluster') throw new Error(`'${s}' is not one of single, sentinel, cluster`);
      return v;
    },
  ),
  redisPerSecondSocketType: spec<'tcp'>(
    'REDIS_PERSECOND_SOCKET_TYPE',
    'tcp',
    'tcp',
    'How the per-second Redis is reached: tcp (unix sockets are not supported).',
    (s) => {
      if (s.trim().toLowerCase() !== 'tcp') throw new Error(`'${s}': the per-second Redis is reached over tcp only`);
      return 'tcp';
    },
  ),
  redisPerSecondAuth: str('REDIS_PERSECOND_AUTH', '', 'Password (or user:password) of the per-second Redis, when its URL carries none.'),
  redisPerSecondSentinelAuth: str('REDIS_PERSECOND_SENTINEL_AUTH', '', "Password of the per-second Redis's sentinels themselves."),
  redisPerSecondTls: bool('REDIS_PERSECOND_TLS', false, 'Reach the per-second Redis over TLS (with the REDIS_TLS_* files).'),
};

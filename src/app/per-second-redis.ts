/**
 * The options of the per-second Redis (REDIS_PERSECOND=true) from its settings: the URL in our form or the
 * reference's (host:port; `master,host:port,...` with Sentinel; `host:port,...` with Cluster), its password
 * (REDIS_PERSECOND_AUTH), its sentinels' password and TLS; everything else (timeouts, TLS files, the probe) as
 * the main Redis has it. Part of the composition root.
 */
import type { Settings } from '../settings/settings.js';
import { parseHostPorts } from '../storage/redis/options.js';
import type { RedisStoreOptions } from '../storage/redis/redis-store.js';
import { StartupError } from '../vocab/startup-error.js';

export function perSecondRedisOptions(settings: Settings, base: RedisStoreOptions): RedisStoreOptions {
  const text = settings.redisPerSecondUrl;
  if (text === '') throw new StartupError('REDIS_PERSECOND=true needs REDIS_PERSECOND_URL (the per-second Redis: host:port or redis://host:port)');
  const type = settings.redisPerSecondType;
  let url: URL;
  let topology: Pick<RedisStoreOptions, 'sentinelMaster' | 'sentinels' | 'clusterNodes'> = {};
  try {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) url = new URL(text);
    else {
      const parts = text
        .split(',')
        .map((p) => p.trim())
        .filter((p) => p !== '');
      if (type === 'sentinel') {
        if (parts.length < 2) throw new Error('with REDIS_PERSECOND_TYPE=sentinel it is "master-name,host:port[,host:port...]"');
        const sentinels = parseHostPorts(parts.slice(1).join(','), 26379);
        topology = { sentinelMaster: parts[0]!, sentinels };
        url = new URL(`redis://${parts[1]}`);
      } else {
        const nodes = parseHostPorts(parts.join(','));
        if (type === 'single' && nodes.length !== 1) throw new Error('a single Redis is one host:port (several are for sentinel or cluster)');
        if (type === 'cluster') topology = { clusterNodes: nodes };
        url = new URL(`redis://${parts[0]}`);
      }
    }
  } catch (error) {
    throw new StartupError(`REDIS_PERSECOND_URL: ${(error as Error).message}`);
  }
  if (settings.redisPerSecondAuth !== '' && url.password === '') {
    const auth = settings.redisPerSecondAuth;
    const colon = auth.indexOf(':');
    url.username = encodeURIComponent(colon === -1 ? '' : auth.slice(0, colon));
    url.password = encodeURIComponent(colon === -1 ? auth : auth.slice(colon + 1));
  }
  if (settings.redisPerSecondTls && url.protocol === 'redis:') url = new URL(url.href.replace(/^redis:/, 'rediss:'));
  const tls = url.protocol === 'rediss:' ? base.tls : undefined;
  const { sentinels: _s, clusterNodes: _c, sentinelPassword: _p, tls: _t, ...common } = base;
  return {
    ...common,
    url: url.href.replace(/\/$/, ''),
    type,
    ...topology,
    ...(settings.redisPerSecondSentinelAuth !== '' ? { sentinelPassword: settings.redisPerSecondSentinelAuth } : {}),
    ...(tls !== undefined ? { tls } : {}),
  };
}

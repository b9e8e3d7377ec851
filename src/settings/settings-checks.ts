/**
 * Settings that are each valid but wrong together, checked when the service starts (not by `check`, which
 * reads rules only). The worst kind of misconfiguration runs without a word and without limits: Redis
 * settings given while the counters stay in this process's memory look like a working shared limit, but
 * every replica counts alone.
 */
import type { Notice, SettingName, Settings } from './settings.js';
import { SETTINGS } from './settings.js';

/**
 * The settings that only mean something with BACKEND=redis. REDIS_COMMAND_TIMEOUT_MS is not one: it also
 * bounds a decision without a gRPC deadline on the memory store.
 */
const REDIS_ONLY: readonly SettingName[] = (Object.keys(SETTINGS) as SettingName[]).filter(
  (n) => SETTINGS[n].env.startsWith('REDIS_') && n !== 'redisCommandTimeoutMs',
);

export interface CombinationResult {
  /** Stop the start (SettingsError). */
  readonly errors: string[];
  /** Log at start beside the reference notices. */
  readonly notices: Notice[];
}

export function checkCombination(settings: Settings, given: ReadonlySet<SettingName>): CombinationResult {
  const errors: string[] = [];
  const notices: Notice[] = [];
  const redis = REDIS_ONLY.filter((n) => given.has(n)).map((n) => SETTINGS[n].env);
  errors.push(...memcachedProblems(settings, given));
  if (settings.backend === 'memory' && redis.length > 0) {
    const names = redis.join(', ');
    if (!given.has('backend')) {
      errors.push(
        `${names} set, but BACKEND is not: counters would stay in this process's memory and Redis would never be used; set BACKEND=redis (or BACKEND=memory to keep counters in memory on purpose)`,
      );
    } else {
      notices.push({
        level: 'warn',
        setting: redis[0]!,
        message: `${names} set, but BACKEND=memory: counters are kept in this process's memory and Redis is not used`,
      });
    }
  }
  if (settings.grpcTransport === 'grpc-js') {
    // The gRPC port has one transport; a configuration that names the other still starts and serves alike.
    notices.push({
      level: 'warn',
      setting: 'GRPC_TRANSPORT',
      message:
        'GRPC_TRANSPORT=grpc-js: the gRPC port is served by lean, its only transport (the same methods, statuses, deadlines, bounds, TLS and Unix sockets); remove the setting (docs/settings.md)',
    });
  }
  const statsd = (['statsdHost', 'statsdPort', 'statsdProtocol', 'extraTags'] as const).filter((n) => given.has(n)).map((n) => SETTINGS[n].env);
  if (statsd.length > 0 && !settings.useStatsd && !settings.useDogStatsd) {
    // The reference's USE_STATSD defaults to true; here it is off unless set, so say what a statsd setting alone does.
    notices.push({ level: 'warn', setting: statsd[0]!, message: `${statsd.join(', ')} set, but USE_STATSD is not: no stats are sent; set USE_STATSD=true` });
  }
  if (settings.disableStats) {
    const off = (['useStatsd', 'useDogStatsd', 'usePrometheus', 'prometheusMapperYaml'] as const).filter((n) => given.has(n)).map((n) => SETTINGS[n].env);
    if (off.length > 0)
      notices.push({ level: 'warn', setting: 'DISABLE_STATS', message: `DISABLE_STATS=true turns off ${off.join(', ')}, as in envoyproxy/ratelimit` });
  }
  return { errors, notices };
}

/** The settings that only mean something with BACKEND=memcached. */
const MEMCACHE_ONLY: readonly SettingName[] = (Object.keys(SETTINGS) as SettingName[]).filter((n) => SETTINGS[n].env.startsWith('MEMCACHE_'));

/** MEMCACHE_* without BACKEND=memcached; BACKEND=memcached without exactly one of MEMCACHE_HOST_PORT, MEMCACHE_SRV. */
function memcachedProblems(settings: Settings, given: ReadonlySet<SettingName>): string[] {
  if (settings.backend !== 'memcached') {
    const names = MEMCACHE_ONLY.filter((n) => given.has(n)).map((n) => SETTINGS[n].env);
    if (names.length === 0 || given.has('backend')) return [];
    return [`${names.join(', ')} set, but BACKEND is not: counters would never reach memcached; set BACKEND=memcached`];
  }
  const hosts = settings.memcacheHostPort.length > 0;
  const srv = settings.memcacheSrv !== '';
  if (hosts && srv) return ['BACKEND=memcached: both MEMCACHE_HOST_PORT and MEMCACHE_SRV are set; set one of them'];
  if (!hosts && !srv) return ['BACKEND=memcached needs MEMCACHE_HOST_PORT (host:port,...) or MEMCACHE_SRV (_service._proto.name)'];
  return [];
}

/** 127.0.0.0/8, ::1 (also as an IPv4-mapped address), `localhost`: reachable from this host only. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * The admin port bound beyond loopback (HTTP_HOST=0.0.0.0, the default, as envoyproxy/ratelimit binds): kept
 * for drop-in, but said at start in one line, because anyone who reaches it reads the rules (GET /rules) and
 * asks POST /json (which spends quota with JSON_API=on).
 */
export function exposureNotices(settings: Settings): Notice[] {
  if (isLoopback(settings.httpHost)) return [];
  const json = settings.jsonApi === 'off' ? '' : ` and POST /json (JSON_API=${settings.jsonApi}${settings.jsonApi === 'on' ? ', spends quota' : ''})`;
  // The top limited keys name clients (descriptor values) unless TOP_VALUES hashes or hides them.
  const top = settings.topKeys === 0 ? '' : `, the clients being limited (GET /top and the status page at /, TOP_VALUES=${settings.topValues})`;
  return [
    {
      level: 'warn',
      setting: 'HTTP_HOST',
      message: `the admin port listens on ${settings.httpHost}:${settings.httpPort}, beyond loopback: anyone who reaches it reads GET /rules${top}${json}; set HTTP_HOST=127.0.0.1 to keep it inside this host (docs/security.md, "Closing the admin port")`,
    },
  ];
}

/** envoyproxy/ratelimit's settings, read under their own names and meanings. */
import { describe, expect, it } from 'vitest';
import { REFERENCE_SETTINGS } from '../../../src/compat/reference-settings.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import { createLogger } from '../../../src/observability/log.js';
import { SETTINGS, SettingsError, loadSettings } from '../../../src/settings/settings.js';
import { planClient } from '../../../src/storage/redis/options.js';
import { redisOptions } from '../../../src/app/store-factory.js';

const quiet = createLogger({ level: 'error', format: 'json', write: () => {} });

function problems(env: Record<string, string>, argv: string[] = []): string[] {
  try {
    loadSettings(env, argv);
  } catch (e) {
    if (e instanceof SettingsError) return [...e.problems];
    throw e;
  }
  return [];
}

/** Where the Redis client built from these settings would connect. */
function redisTarget(env: Record<string, string>) {
  const { settings } = loadSettings(env);
  return planClient(redisOptions(settings, new FakeClock(0), quiet));
}

/** Every setting the reference binary (f2fb157) declares, as `strings` lists its envconfig tags. */
const REFERENCE_BINARY_SETTINGS = `BACKEND_TYPE CACHE_KEY_PREFIX CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS CONFIG_GRPC_XDS_CLIENT_TLS_CERT
CONFIG_GRPC_XDS_CLIENT_TLS_KEY CONFIG_GRPC_XDS_NODE_ID CONFIG_GRPC_XDS_NODE_METADATA CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL
CONFIG_GRPC_XDS_SERVER_TLS_CACERT CONFIG_GRPC_XDS_SERVER_TLS_SAN CONFIG_GRPC_XDS_SERVER_URL CONFIG_GRPC_XDS_SERVER_USE_TLS CONFIG_TYPE
DEBUG_HOST DEBUG_PORT DISABLE_STATS EXPIRATION_JITTER_MAX_SECONDS EXTRA_TAGS FORCE_START_WITHOUT_INITIAL_CONFIG
GOSTATS_FLUSH_INTERVAL_SECONDS GOSTATS_LOGGING_SINK_DISABLED GRPC_CLIENT_TLS_CACERT GRPC_CLIENT_TLS_SAN GRPC_HOST
GRPC_MAX_CONNECTION_AGE GRPC_MAX_CONNECTION_AGE_GRACE GRPC_PORT GRPC_SERVER_TLS_CERT GRPC_SERVER_TLS_KEY GRPC_SERVER_USE_TLS GRPC_UDS
HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED HOST LIMIT_LIMIT_HEADER LIMIT_REMAINING_HEADER LIMIT_RESET_HEADER
LIMIT_RESPONSE_HEADERS_ENABLED LOCAL_CACHE_SIZE_IN_BYTES LOG_FORMAT LOG_LEVEL MEMCACHE_HOST_PORT MEMCACHE_MAX_IDLE_CONNS MEMCACHE_SRV
MEMCACHE_SRV_REFRESH MEMCACHE_TLS MEMCACHE_TLS_CACERT MEMCACHE_TLS_CLIENT_CERT MEMCACHE_TLS_CLIENT_KEY
MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION MERGE_DOMAIN_CONFIG NEAR_LIMIT_RATIO PORT PROMETHEUS_ADDR PROMETHEUS_MAPPER_YAML
PROMETHEUS_PATH PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS PROTO QUOTA_MODE REDIS_AUTH REDIS_CLUSTER_PIPELINE_PARALLELISM
REDIS_HEALTH_CHECK_ACTIVE_CONNECTION REDIS_PERSECOND REDIS_PERSECOND_AUTH REDIS_PERSECOND_CLUSTER_PIPELINE_PARALLELISM
REDIS_PERSECOND_PIPELINE_LIMIT REDIS_PERSECOND_PIPELINE_WINDOW REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR REDIS_PERSECOND_POOL_SIZE
REDIS_PERSECOND_SENTINEL_AUTH REDIS_PERSECOND_SOCKET_TYPE REDIS_PERSECOND_TIMEOUT REDIS_PERSECOND_TLS REDIS_PERSECOND_TYPE
REDIS_PERSECOND_URL REDIS_PIPELINE_LIMIT REDIS_PIPELINE_WINDOW REDIS_POOL_ON_EMPTY_BEHAVIOR REDIS_POOL_SIZE REDIS_SENTINEL_AUTH
REDIS_SOCKET_TYPE REDIS_STARTUP_INITIAL_INTERVAL REDIS_STARTUP_MAX_ELAPSED_TIME REDIS_STARTUP_MAX_INTERVAL REDIS_TIMEOUT REDIS_TLS
REDIS_TLS_CACERT REDIS_TLS_CLIENT_CERT REDIS_TLS_CLIENT_KEY REDIS_TLS_SKIP_HOSTNAME_VERIFICATION REDIS_TYPE REDIS_URL
RESPONSE_DYNAMIC_METADATA RUNTIME_APPDIRECTORY RUNTIME_IGNOREDOTFILES RUNTIME_ROOT RUNTIME_SUBDIRECTORY RUNTIME_WATCH_ROOT
SHADOW_MODE STATSD_HOST STATSD_PORT STATSD_PROTOCOL STATS_FLUSH_INTERVAL STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT TRACING_ENABLED
TRACING_EXPORTER_PROTOCOL TRACING_SAMPLING_RATE TRACING_SERVICE_INSTANCE_ID TRACING_SERVICE_NAME TRACING_SERVICE_NAMESPACE
USE_DOG_STATSD USE_DOG_STATSD_MOGRIFIERS USE_PROMETHEUS USE_STATSD XDS_CLIENT_BACKOFF_INITIAL_INTERVAL XDS_CLIENT_BACKOFF_JITTER
XDS_CLIENT_BACKOFF_MAX_INTERVAL XDS_CLIENT_BACKOFF_RANDOM_FACTOR XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES`.split(/\s+/);

describe('the table of reference settings', () => {
  it('has every setting of the reference, once', () => {
    const names = REFERENCE_SETTINGS.map((s) => s.name);
    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort()).toEqual([...REFERENCE_BINARY_SETTINGS].sort());
  });

  it('names a setting of ours for every reference setting said to be the same', () => {
    const ours = new Set(Object.values(SETTINGS).map((s) => s.env));
    for (const s of REFERENCE_SETTINGS.filter((r) => r.status === 'same')) expect(ours.has(s.name), s.name).toBe(true);
  });
});

describe('a deployment configured for envoyproxy/ratelimit', () => {
  const ISSUE_ENV = {
    RUNTIME_ROOT: '/data',
    RUNTIME_SUBDIRECTORY: 'ratelimit',
    BACKEND_TYPE: 'redis',
    REDIS_SOCKET_TYPE: 'tcp',
    REDIS_URL: 'redis:6379',
    PORT: '8080',
    DEBUG_PORT: '6070',
  };

  it('gets the Redis backend, the runtime directory (every non-dot file), its ports', () => {
    const { settings } = loadSettings(ISSUE_ENV);
    expect(settings.backend).toBe('redis');
    expect(settings.configDir).toBe('/data/ratelimit/config');
    expect(settings.configAllFiles).toBe(true);
    expect(settings.configDotFiles).toBe(false);
    expect(settings.httpPort).toBe(8080);
    expect(settings.debugPort).toBe(6070);
  });

  it('skips dot files unless RUNTIME_IGNOREDOTFILES=false says to load them', () => {
    expect(loadSettings({ ...ISSUE_ENV, RUNTIME_IGNOREDOTFILES: 'true' }).settings.configDotFiles).toBe(false);
    expect(loadSettings({ ...ISSUE_ENV, RUNTIME_IGNOREDOTFILES: 'false' }).settings.configDotFiles).toBe(true);
    expect(loadSettings({ RUNTIME_IGNOREDOTFILES: 'false' }).settings.configDotFiles).toBe(false); // no runtime directory: no rules read its way
    expect(problems({ ...ISSUE_ENV, RUNTIME_IGNOREDOTFILES: 'ture' })).toEqual(["RUNTIME_IGNOREDOTFILES: 'ture' is not a boolean (true or false)"]);
  });

  it('reads REDIS_URL=redis:6379 as host redis, port 6379, database 0', () => {
    const plan = redisTarget(ISSUE_ENV);
    expect(plan.type).toBe('single');
    expect(plan.options).toMatchObject({ host: 'redis', port: 6379, db: 0 });
  });

  it('uses Redis when REDIS_URL is the reference form and BACKEND_TYPE is left at its default (redis)', () => {
    expect(loadSettings({ REDIS_SOCKET_TYPE: 'tcp', REDIS_URL: 'redis:6379' }).settings.backend).toBe('redis');
    expect(loadSettings({ REDIS_URL: 'redis://127.0.0.1:6379' }).settings.backend).toBe('memory');
  });

  it('reads the sentinel form "master,host:port,..." and the cluster node list', () => {
    const sentinel = redisTarget({
      REDIS_SOCKET_TYPE: 'tcp',
      REDIS_TYPE: 'SENTINEL',
      REDIS_URL: 'mymaster,s1:26379,s2:26380',
      REDIS_SENTINEL_AUTH: 'sp',
      REDIS_AUTH: 'pw',
    });
    expect(sentinel.type).toBe('sentinel');
    expect(sentinel.options).toMatchObject({
      name: 'mymaster',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26380 },
      ],
      sentinelPassword: 'sp',
      password: 'pw',
    });
    const cluster = redisTarget({ REDIS_SOCKET_TYPE: 'tcp', REDIS_TYPE: 'CLUSTER', REDIS_URL: 'n1:7000,n2:7001,n3:7002' });
    expect(cluster.type).toBe('cluster');
    expect(cluster.type === 'cluster' && cluster.nodes).toEqual([
      { host: 'n1', port: 7000 },
      { host: 'n2', port: 7001 },
      { host: 'n3', port: 7002 },
    ]);
  });

  it('puts REDIS_AUTH (password or user:password) and REDIS_TLS into the connection', () => {
    expect(redisTarget({ REDIS_URL: 'r:6379', REDIS_AUTH: 's3cr:t' }).options).toMatchObject({ username: 's3cr', password: 't' });
    expect(redisTarget({ REDIS_URL: 'r:6379', REDIS_AUTH: 'only-pass' }).options).toMatchObject({ password: 'only-pass' });
    const { settings } = loadSettings({
      REDIS_URL: 'r:6380',
      REDIS_TLS: 'true',
      REDIS_TLS_CACERT: '/ca.pem',
      REDIS_TLS_CLIENT_CERT: '/c.pem',
      REDIS_TLS_CLIENT_KEY: '/k.pem',
    });
    expect(settings).toMatchObject({ redisUrl: 'rediss://r:6380', redisTlsCa: '/ca.pem', redisTlsCert: '/c.pem', redisTlsKey: '/k.pem' });
  });

  it('maps HOST, LOCAL_CACHE_SIZE_IN_BYTES, and accepts logrus level names', () => {
    const { settings } = loadSettings({ HOST: '127.0.0.1', LOCAL_CACHE_SIZE_IN_BYTES: '1048576', LOG_LEVEL: 'WARNING' });
    expect(settings).toMatchObject({ httpHost: '127.0.0.1', localCacheSize: 10485, logLevel: 'warn' });
    expect(loadSettings({ LOCAL_CACHE_SIZE_IN_BYTES: '0' }).settings.localCacheSize).toBe(0);
    expect(loadSettings({ LOG_LEVEL: 'trace' }).settings.logLevel).toBe('trace');
    expect(loadSettings({ LOG_LEVEL: 'WARN' }).settings.logLevel).toBe('warn');
    expect(loadSettings({ LOG_LEVEL: 'fatal' }).settings.logLevel).toBe('error');
  });
});

describe('conflicts, and settings that change nothing here', () => {
  it('fails when a reference name and ours disagree, naming both', () => {
    expect(problems({ PORT: '8080', HTTP_PORT: '9000' })).toEqual([
      "PORT (envoyproxy/ratelimit) means HTTP_PORT=8080, but HTTP_PORT is '9000': set only one of them",
    ]);
    expect(problems({ RUNTIME_ROOT: '/data', RUNTIME_SUBDIRECTORY: 'rl' }, ['--config-dir', '/etc/rules'])[0]).toContain(
      "RUNTIME_ROOT+RUNTIME_SUBDIRECTORY (envoyproxy/ratelimit) means CONFIG_DIR=/data/rl/config, but --config-dir is '/etc/rules'",
    );
    expect(problems({ BACKEND_TYPE: 'redis', BACKEND: 'memory' })).toHaveLength(1);
    expect(problems({ REDIS_URL: 'redis://:a@h:1', REDIS_AUTH: 'b' })).toEqual(['REDIS_AUTH and the password in REDIS_URL disagree: set only one of them']);
  });

  it('reports a value that does not parse as such, not as a disagreement', () => {
    expect(problems({ PORT: '8080', HTTP_PORT: 'abc' })).toEqual(["HTTP_PORT: 'abc' is not a whole number"]);
    expect(problems({ PORT: 'abc', HTTP_PORT: 'abc' })).toEqual(["HTTP_PORT: 'abc' is not a whole number"]);
    expect(problems({ PORT: 'abc' }, ['--http-port', '9000'])).toEqual(["HTTP_PORT: 'abc' is not a whole number"]);
  });

  it('accepts both names when they agree', () => {
    expect(loadSettings({ PORT: '9000', HTTP_PORT: '9000', BACKEND_TYPE: 'REDIS', BACKEND: 'redis' }).settings.httpPort).toBe(9000);
  });

  it('reads BACKEND_TYPE=memcache and the MEMCACHE_* settings under their own names', () => {
    const { settings } = loadSettings({
      BACKEND_TYPE: 'memcache',
      MEMCACHE_HOST_PORT: 'mc-0:11211, mc-1:11211',
      MEMCACHE_SRV_REFRESH: '30s',
      MEMCACHE_TLS: 'true',
    });
    expect(settings).toMatchObject({ backend: 'memcached', memcacheHostPort: ['mc-0:11211', 'mc-1:11211'], memcacheSrvRefreshMs: 30_000, memcacheTls: true });
    expect(problems({ BACKEND_TYPE: 'memcache' })).toEqual([]);
    const notices = (env: Record<string, string>) => loadSettings(env).notices.filter((n) => n.setting === 'BACKEND_TYPE');
    expect(notices({ BACKEND_TYPE: 'memcache' })[0]?.message).toMatch(/set MEMCACHE_KEY_FORMAT=envoy \(and CACHE_KEY_PREFIX/);
    expect(notices({ BACKEND_TYPE: 'memcache', MEMCACHE_KEY_FORMAT: 'envoy' })).toEqual([]);
  });

  it('refuses what would run differently from the reference: unix sockets, gRPC TLS', () => {
    expect(problems({ REDIS_SOCKET_TYPE: 'unix', REDIS_URL: '/var/run/redis.sock' })[0]).toMatch(/^REDIS_SOCKET_TYPE=unix: unix sockets are not supported/);
    expect(problems({ GRPC_SERVER_USE_TLS: 'true' })[0]).toMatch(/^GRPC_SERVER_USE_TLS=true needs GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY/);
    expect(problems({ CONFIG_TYPE: 'FILE', GRPC_SERVER_USE_TLS: 'false' })).toEqual([]);
  });

  it('reads GRPC_UDS as GRPC_HOST=unix:PATH, over GRPC_HOST as the reference listens on the socket alone', () => {
    expect(loadSettings({ GRPC_UDS: '/run/rl.sock' }).settings.grpcHost).toBe('unix:/run/rl.sock');
    expect(loadSettings({ GRPC_UDS: '/run/rl.sock', GRPC_HOST: '0.0.0.0', GRPC_PORT: '8081' }).settings.grpcHost).toBe('unix:/run/rl.sock');
    expect(loadSettings({ GRPC_UDS: '', GRPC_HOST: '0.0.0.0' }).settings.grpcHost).toBe('0.0.0.0');
  });

  it('gives REDIS_TIMEOUT (a Go duration) to the Redis connection, as the reference gives it to its dialer', () => {
    const env = { REDIS_SOCKET_TYPE: 'tcp', REDIS_URL: 'redis:6379' };
    expect(loadSettings({ ...env, REDIS_TIMEOUT: '2s' }).settings.redisConnectTimeoutMs).toBe(2000);
    expect(loadSettings({ ...env, REDIS_TIMEOUT: '0' }).settings.redisConnectTimeoutMs).toBe(2 ** 31 - 1);
    expect(redisTarget({ ...env, REDIS_TIMEOUT: '1m30s' }).options).toMatchObject({ connectTimeout: 90_000 });
    expect(problems({ ...env, REDIS_TIMEOUT: 'ten' })).toEqual(["REDIS_TIMEOUT: 'ten' is not a duration such as 500ms, 10s or 1m30s"]);
    expect(problems({ ...env, REDIS_TIMEOUT: '2s', REDIS_CONNECT_TIMEOUT_MS: '500' })[0]).toMatch(/REDIS_TIMEOUT .* means REDIS_CONNECT_TIMEOUT_MS=2000/);
  });

  it('reads REDIS_TLS_SKIP_HOSTNAME_VERIFICATION into the TLS options of the Redis connection', () => {
    const env = { REDIS_SOCKET_TYPE: 'tcp', REDIS_URL: 'redis:6379', REDIS_TLS: 'true' };
    const { settings } = loadSettings({ ...env, REDIS_TLS_SKIP_HOSTNAME_VERIFICATION: 'true' });
    expect(redisOptions(settings, new FakeClock(0), quiet).tls).toEqual({ skipHostnameVerification: true });
    const tlsOf = (e: Record<string, string>) => (redisTarget(e).options as { tls?: { checkServerIdentity?: unknown } }).tls;
    expect(typeof tlsOf({ ...env, REDIS_TLS_SKIP_HOSTNAME_VERIFICATION: 'true' })?.checkServerIdentity).toBe('function');
    expect(tlsOf(env)?.checkServerIdentity).toBeUndefined();
    // without TLS it changes nothing, as in the reference
    expect(redisTarget({ REDIS_SOCKET_TYPE: 'tcp', REDIS_URL: 'redis:6379', REDIS_TLS_SKIP_HOSTNAME_VERIFICATION: 'true' }).options).not.toHaveProperty('tls');
  });

  it('names every reference-only setting that is set', () => {
    const { notices } = loadSettings({
      USE_STATSD: 'true',
      STATSD_HOST: 'statsd',
      DISABLE_STATS: 'true',
      GOSTATS_FLUSH_INTERVAL_SECONDS: '5',
      REDIS_POOL_SIZE: '20',
      RUNTIME_WATCH_ROOT: 'false',
    });
    expect(notices.map((n) => [n.level, n.setting])).toEqual([
      ['info', 'RUNTIME_WATCH_ROOT'],
      ['info', 'GOSTATS_FLUSH_INTERVAL_SECONDS'],
      ['info', 'REDIS_POOL_SIZE'],
    ]);
  });
});

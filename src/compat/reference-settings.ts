/**
 * Every setting of envoyproxy/ratelimit (its src/settings/settings.go at f2fb157, names and defaults as the
 * binary declares them), with what it means here. This one table drives three things:
 *  - the translation of a reference deployment's environment into our settings (translate.ts),
 *  - the start-up log line for each reference-only setting that is set,
 *  - the mapping table of docs/switching.md (scripts/switching-table.ts; a test keeps the page in step).
 *
 * status:
 *  - same:        same name, same meaning here.
 *  - mapped:      read and translated into our setting(s) named in `here`.
 *  - no-op:       nothing to do here: our behaviour already is what the setting asks for (see `here`). With
 *                 `fatal`, values other than `accepts` stop the start (running would silently differ from the
 *                 reference).
 */

export type ReferenceStatus = 'same' | 'mapped' | 'no-op';

export interface ReferenceSetting {
  readonly name: string;
  /** The reference's default ('' = empty). */
  readonly default: string;
  readonly status: ReferenceStatus;
  /** Our equivalent, or what to do instead. */
  readonly here: string;
  /** Values that change nothing here (logged at info, not warn): usually the reference's default or "off". */
  readonly accepts?: (value: string) => boolean;
  /** Values other than `accepts` would change behaviour in ways we cannot honour: fail start. */
  readonly fatal?: boolean;
}

const is =
  (...values: string[]) =>
  (v: string) =>
    values.includes(v.trim().toLowerCase());

function row(name: string, def: string, status: ReferenceStatus, here: string, extra: Partial<ReferenceSetting> = {}): ReferenceSetting {
  return { name, default: def, status, here, ...extra };
}

export const REFERENCE_SETTINGS: readonly ReferenceSetting[] = [
  // listeners
  row('HOST', '0.0.0.0', 'mapped', 'HTTP_HOST'),
  row('PORT', '8080', 'mapped', 'HTTP_PORT (serves `/healthcheck`, `/json`, `/metrics`, ...)'),
  row('DEBUG_HOST', '0.0.0.0', 'same', 'DEBUG_HOST'),
  row('DEBUG_PORT', '6070', 'same', 'DEBUG_PORT (`/rlconfig` and more); off unless set'),
  row('GRPC_HOST', '0.0.0.0', 'same', 'GRPC_HOST'),
  row('GRPC_PORT', '8081', 'same', 'GRPC_PORT'),
  row(
    'GRPC_UDS',
    '',
    'mapped',
    'GRPC_HOST=unix:PATH: gRPC on the Unix socket PATH instead of GRPC_HOST:GRPC_PORT, as the reference listens; the socket file gets GRPC_UNIX_SOCKET_MODE (660)',
  ),
  row('PROTO', 'tcp', 'no-op', 'we always listen on tcp; unset PROTO', { accepts: is('tcp'), fatal: true }),
  row('GRPC_MAX_CONNECTION_AGE', '24h', 'same', 'GRPC_MAX_CONNECTION_AGE (±10% jitter; GOAWAY, calls in flight answered)'),
  row('GRPC_MAX_CONNECTION_AGE_GRACE', '1h', 'same', 'GRPC_MAX_CONNECTION_AGE_GRACE'),
  row(
    'GRPC_SERVER_USE_TLS',
    'false',
    'mapped',
    'true: gRPC TLS with GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY (read as GRPC_TLS_CERT, GRPC_TLS_KEY), and client certificates required when GRPC_CLIENT_TLS_CACERT is set (GRPC_TLS_CLIENT_CA); false: those three are ignored, as the reference ignores them',
  ),
  row('GRPC_SERVER_TLS_CERT', '', 'mapped', 'GRPC_TLS_CERT when GRPC_SERVER_USE_TLS=true (reloaded when the file changes)'),
  row('GRPC_SERVER_TLS_KEY', '', 'mapped', 'GRPC_TLS_KEY when GRPC_SERVER_USE_TLS=true'),
  row('GRPC_CLIENT_TLS_CACERT', '', 'mapped', 'GRPC_TLS_CLIENT_CA (mutual TLS) when GRPC_SERVER_USE_TLS=true'),
  row(
    'GRPC_CLIENT_TLS_SAN',
    '',
    'mapped',
    'GRPC_TLS_CLIENT_SAN when GRPC_SERVER_USE_TLS=true and GRPC_CLIENT_TLS_CACERT is set: client certificates must carry it as a subject alternative name; without a client CA it changes nothing, as in the reference',
  ),
  // logs
  row('LOG_LEVEL', 'WARN', 'same', 'LOG_LEVEL (any case; trace, debug, info, warn/warning, error, fatal/panic = error); our default is info'),
  row('LOG_FORMAT', 'text', 'same', 'LOG_FORMAT (json or text); our default is json'),
  // rules
  row('CONFIG_TYPE', 'FILE', 'same', 'CONFIG_TYPE: FILE (CONFIG_DIR) or GRPC_XDS_SOTW (rules from an xDS server, docs/xds.md)'),
  row(
    'FORCE_START_WITHOUT_INITIAL_CONFIG',
    'false',
    'same',
    'FORCE_START_WITHOUT_INITIAL_CONFIG (GRPC_XDS_SOTW): ready at once; until the first set arrives every request is answered OK, where the reference answers UNKNOWN (behind failure_mode_deny: false both mean no limit)',
  ),
  row('CONFIG_GRPC_XDS_NODE_ID', 'default', 'same', 'CONFIG_GRPC_XDS_NODE_ID'),
  row('CONFIG_GRPC_XDS_NODE_METADATA', '', 'same', 'CONFIG_GRPC_XDS_NODE_METADATA (key=value,...)'),
  row('CONFIG_GRPC_XDS_SERVER_URL', 'localhost:18000', 'same', 'CONFIG_GRPC_XDS_SERVER_URL'),
  row(
    'CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL',
    '3s',
    'same',
    'CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL (read and checked; reconnects follow XDS_CLIENT_BACKOFF_*)',
  ),
  row('CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS', '', 'same', 'CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS (key:value,...)'),
  row('CONFIG_GRPC_XDS_SERVER_USE_TLS', 'false', 'same', 'CONFIG_GRPC_XDS_SERVER_USE_TLS'),
  row('CONFIG_GRPC_XDS_CLIENT_TLS_CERT', '', 'same', 'CONFIG_GRPC_XDS_CLIENT_TLS_CERT'),
  row('CONFIG_GRPC_XDS_CLIENT_TLS_KEY', '', 'same', 'CONFIG_GRPC_XDS_CLIENT_TLS_KEY'),
  row('CONFIG_GRPC_XDS_SERVER_TLS_CACERT', '', 'same', 'CONFIG_GRPC_XDS_SERVER_TLS_CACERT'),
  row('CONFIG_GRPC_XDS_SERVER_TLS_SAN', '', 'same', 'CONFIG_GRPC_XDS_SERVER_TLS_SAN'),
  row(
    'XDS_CLIENT_BACKOFF_INITIAL_INTERVAL',
    '10s',
    'same',
    'XDS_CLIENT_BACKOFF_INITIAL_INTERVAL, the first reconnect wait, doubling after each failure; our default is 500ms (the reference, its random factor taken as growth factor, always waits this long)',
  ),
  row('XDS_CLIENT_BACKOFF_MAX_INTERVAL', '60s', 'same', 'XDS_CLIENT_BACKOFF_MAX_INTERVAL'),
  row('XDS_CLIENT_BACKOFF_RANDOM_FACTOR', '0.5', 'same', 'XDS_CLIENT_BACKOFF_RANDOM_FACTOR: each wait spread by ± this share'),
  row('XDS_CLIENT_BACKOFF_JITTER', 'true', 'same', 'XDS_CLIENT_BACKOFF_JITTER'),
  row('XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES', '', 'same', 'XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES'),
  row(
    'RUNTIME_ROOT',
    '/srv/runtime_data/current',
    'mapped',
    'CONFIG_DIR = RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY, with CONFIG_ALL_FILES=true (every non-dot file whatever its extension, in non-dot subdirectories too)',
  ),
  row('RUNTIME_SUBDIRECTORY', '', 'mapped', 'see RUNTIME_ROOT'),
  row('RUNTIME_APPDIRECTORY', 'config', 'mapped', 'see RUNTIME_ROOT'),
  row(
    'RUNTIME_IGNOREDOTFILES',
    'false',
    'mapped',
    "with RUNTIME_ROOT: true skips dot files and dot directories; false loads them too (CONFIG_DOT_FILES=true); **unset, they are skipped** (the reference loads them: an editor's swap file becomes a broken rule file). Kubernetes' ConfigMap entries (`..data`, `..2024_…`) are skipped either way",
  ),
  row('RUNTIME_WATCH_ROOT', 'true', 'no-op', 'the rules directory is always watched, ConfigMap symlink swaps included (CONFIG_WATCH)'),
  row('MERGE_DOMAIN_CONFIG', 'false', 'same', 'MERGE_DOMAIN_CONFIG'),
  row(
    'HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED',
    'false',
    'same',
    'HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: not serving while the rules in force hold no domain',
  ),
  // stats
  row(
    'USE_STATSD',
    'true',
    'same',
    "USE_STATSD, the reference's stat names (docs/metrics-reference.md); **off unless set**: set USE_STATSD=true where a statsd server listens",
  ),
  row('STATSD_HOST', 'localhost', 'same', 'STATSD_HOST'),
  row('STATSD_PORT', '8125', 'same', 'STATSD_PORT'),
  row('STATSD_PROTOCOL', 'tcp', 'same', 'STATSD_PROTOCOL (tcp or udp)'),
  row('USE_DOG_STATSD', 'false', 'same', 'USE_DOG_STATSD (udp; EXTRA_TAGS as tags)'),
  row('USE_DOG_STATSD_MOGRIFIERS', '', 'same', 'USE_DOG_STATSD_MOGRIFIERS, with DOG_STATSD_MOGRIFIER_<NAME>_PATTERN, _NAME, _TAGS'),
  row('EXTRA_TAGS', '', 'same', 'EXTRA_TAGS (statsd and DogStatsD; for Prometheus add labels in the scrape config)'),
  row('STATS_FLUSH_INTERVAL', '10s', 'same', 'STATS_FLUSH_INTERVAL (statsd counters; Prometheus series are current at every scrape)'),
  row('GOSTATS_FLUSH_INTERVAL_SECONDS', '5', 'no-op', 'the reference flushes on STATS_FLUSH_INTERVAL and never reads it; neither do we'),
  row('GOSTATS_LOGGING_SINK_DISABLED', 'false', 'no-op', 'stats are never written to the log here'),
  row(
    'DISABLE_STATS',
    'false',
    'same',
    "DISABLE_STATS: none of the reference's stats (statsd, DogStatsD, PROMETHEUS_ADDR, the ratelimit_service_* series); this service's own series stay on HTTP_PORT's /metrics",
  ),
  row('USE_PROMETHEUS', 'false', 'same', 'USE_PROMETHEUS (a second listener; `/metrics` is also on HTTP_PORT)'),
  row('PROMETHEUS_ADDR', ':9090', 'same', 'PROMETHEUS_ADDR'),
  row('PROMETHEUS_PATH', '/metrics', 'same', 'PROMETHEUS_PATH'),
  row(
    'PROMETHEUS_MAPPER_YAML',
    '',
    'same',
    "PROMETHEUS_MAPPER_YAML: the reference's stats under the names and labels of the statsd_exporter mapping (docs/metrics-reference.md)",
  ),
  row('PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS', 'false', 'same', 'PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS (the built-in mapping only, as there)'),
  // counters and caches
  row('BACKEND_TYPE', 'redis', 'mapped', 'BACKEND (redis, or memcached for memcache: docs/memcached.md)'),
  row('CACHE_KEY_PREFIX', '', 'same', 'CACHE_KEY_PREFIX; our default is `rl:`'),
  row(
    'EXPIRATION_JITTER_MAX_SECONDS',
    '300',
    'same',
    "EXPIRATION_JITTER_MAX_SECONDS on the reference's counters (REDIS_KEY_FORMAT=envoy); our own keys hold their window and expire at its end",
  ),
  row('LOCAL_CACHE_SIZE_IN_BYTES', '0', 'mapped', 'LOCAL_CACHE_SIZE = bytes ÷ 100 entries (0 = off); our default is 100000 entries'),
  row('NEAR_LIMIT_RATIO', '0.8', 'same', 'NEAR_LIMIT_RATIO'),
  row(
    'STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT',
    'false',
    'no-op',
    'a rejected request consumes nothing here, on any of its limits; the reference with true spares only the other limits of a rejected request, the one that rejected it still counts the hits',
  ),
  row('SHADOW_MODE', 'false', 'same', 'SHADOW_MODE: every limit reports but never rejects'),
  row('QUOTA_MODE', 'false', 'same', 'QUOTA_MODE: every descriptor in quota mode, as `quota_mode: true` on every rule'),
  row(
    'RESPONSE_DYNAMIC_METADATA',
    'false',
    'same',
    "RESPONSE_DYNAMIC_METADATA: the request (domain, descriptors, hits_addend) and the matched rules' metadata as dynamic_metadata in every response; we add quotaModeEnabled / quotaModeViolations when quota_mode rules matched",
  ),
  row('LIMIT_RESPONSE_HEADERS_ENABLED', 'false', 'same', 'LIMIT_RESPONSE_HEADERS_ENABLED (see also RATELIMIT_HEADERS and X_RATELIMIT_HEADERS)'),
  row('LIMIT_LIMIT_HEADER', 'RateLimit-Limit', 'same', 'LIMIT_LIMIT_HEADER'),
  row('LIMIT_REMAINING_HEADER', 'RateLimit-Remaining', 'same', 'LIMIT_REMAINING_HEADER'),
  row('LIMIT_RESET_HEADER', 'RateLimit-Reset', 'same', 'LIMIT_RESET_HEADER'),
  // redis
  row('REDIS_SOCKET_TYPE', 'unix', 'mapped', 'tcp: REDIS_URL host:port becomes redis://host:port; unix sockets are not supported and stop the start'),
  row('REDIS_TYPE', 'SINGLE', 'same', 'REDIS_TYPE (single, sentinel, cluster; any case)'),
  row(
    'REDIS_URL',
    '/var/run/nutcracker/ratelimit.sock',
    'same',
    'REDIS_URL: `host:port` (single), `master,host:port,...` (sentinel) and `host:port,...` (cluster) are read as the reference does; `redis://` URLs too',
  ),
  row('REDIS_AUTH', '', 'mapped', 'the password (or `user:password`) of REDIS_URL'),
  row('REDIS_SENTINEL_AUTH', '', 'mapped', 'REDIS_SENTINEL_PASSWORD'),
  row('REDIS_TLS', 'false', 'mapped', 'rediss:// in REDIS_URL'),
  row('REDIS_TLS_CACERT', '', 'mapped', 'REDIS_TLS_CA'),
  row('REDIS_TLS_CLIENT_CERT', '', 'mapped', 'REDIS_TLS_CERT'),
  row('REDIS_TLS_CLIENT_KEY', '', 'mapped', 'REDIS_TLS_KEY'),
  row('REDIS_TLS_SKIP_HOSTNAME_VERIFICATION', 'false', 'same', "REDIS_TLS_SKIP_HOSTNAME_VERIFICATION: the certificate's chain is verified, not its name"),
  row('REDIS_POOL_SIZE', '10', 'no-op', 'one multiplexed, pipelined connection per Redis node; nothing to size'),
  row('REDIS_POOL_ON_EMPTY_BEHAVIOR', 'WAIT', 'no-op', 'no pool; see REDIS_POOL_SIZE'),
  row('REDIS_PIPELINE_WINDOW', '0', 'no-op', 'commands are pipelined automatically'),
  row('REDIS_PIPELINE_LIMIT', '0', 'no-op', 'commands are pipelined automatically'),
  row('REDIS_CLUSTER_PIPELINE_PARALLELISM', '1', 'no-op', 'cluster commands are pipelined per node automatically'),
  row(
    'REDIS_TIMEOUT',
    '10s',
    'mapped',
    "REDIS_CONNECT_TIMEOUT_MS (0: no bound), the reference's use of it (its dialer's timeout); a decision's Redis call is bounded by the caller's deadline (REDIS_COMMAND_TIMEOUT_MS without one)",
  ),
  row(
    'REDIS_HEALTH_CHECK_ACTIVE_CONNECTION',
    'false',
    'same',
    'REDIS_HEALTH_CHECK_ACTIVE_CONNECTION: GET /healthcheck answers 500 while Redis cannot decide; gRPC health is NOT_SERVING then whatever it says, in every FAILURE_MODE',
  ),
  row(
    'REDIS_STARTUP_INITIAL_INTERVAL',
    '1s',
    'no-op',
    'by default (REDIS_STARTUP=background) we start without waiting for Redis and answer by FAILURE_MODE until it is up; REDIS_STARTUP=wait or fail with REDIS_STARTUP_TIMEOUT_MS waits first',
  ),
  row('REDIS_STARTUP_MAX_INTERVAL', '30s', 'no-op', 'see REDIS_STARTUP_INITIAL_INTERVAL'),
  row('REDIS_STARTUP_MAX_ELAPSED_TIME', '0', 'no-op', 'see REDIS_STARTUP_INITIAL_INTERVAL'),
  row('REDIS_PERSECOND', 'false', 'same', 'REDIS_PERSECOND: limits whose window is one second (unit: second) in a Redis of their own (docs/redis.md)'),
  row('REDIS_PERSECOND_SOCKET_TYPE', 'unix', 'same', 'REDIS_PERSECOND_SOCKET_TYPE: tcp (unix sockets are not supported and stop the start)'),
  row('REDIS_PERSECOND_TYPE', 'SINGLE', 'same', 'REDIS_PERSECOND_TYPE (single, sentinel, cluster; any case)'),
  row('REDIS_PERSECOND_URL', '/var/run/nutcracker/ratelimitpersecond.sock', 'same', 'REDIS_PERSECOND_URL, in the forms REDIS_URL takes (no unix sockets)'),
  row('REDIS_PERSECOND_POOL_SIZE', '10', 'no-op', 'one multiplexed, pipelined connection per Redis node; nothing to size'),
  row('REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR', 'WAIT', 'no-op', 'no pool; see REDIS_PERSECOND_POOL_SIZE'),
  row('REDIS_PERSECOND_AUTH', '', 'same', 'REDIS_PERSECOND_AUTH (password, or user:password)'),
  row('REDIS_PERSECOND_SENTINEL_AUTH', '', 'same', 'REDIS_PERSECOND_SENTINEL_AUTH'),
  row('REDIS_PERSECOND_TLS', 'false', 'same', 'REDIS_PERSECOND_TLS, with the REDIS_TLS_* files (as the reference shares its REDIS_TLS_* files)'),
  row('REDIS_PERSECOND_TIMEOUT', '10s', 'no-op', "the per-second Redis has the main one's REDIS_CONNECT_TIMEOUT_MS, and every decision its deadline"),
  row('REDIS_PERSECOND_PIPELINE_WINDOW', '0', 'no-op', 'commands are pipelined automatically'),
  row('REDIS_PERSECOND_PIPELINE_LIMIT', '0', 'no-op', 'commands are pipelined automatically'),
  row('REDIS_PERSECOND_CLUSTER_PIPELINE_PARALLELISM', '1', 'no-op', 'cluster commands are pipelined per node automatically'),
  // memcache
  row('MEMCACHE_HOST_PORT', '', 'same', 'MEMCACHE_HOST_PORT (BACKEND=memcached; a key on the server its CRC-32 picks, in list order, as there)'),
  row('MEMCACHE_MAX_IDLE_CONNS', '2', 'same', 'MEMCACHE_MAX_IDLE_CONNS: pipelined connections kept open to each server'),
  row('MEMCACHE_SRV', '', 'same', 'MEMCACHE_SRV (targets sorted as there)'),
  row('MEMCACHE_SRV_REFRESH', '0', 'same', 'MEMCACHE_SRV_REFRESH'),
  row('MEMCACHE_TLS', 'false', 'same', 'MEMCACHE_TLS'),
  row('MEMCACHE_TLS_CACERT', '', 'same', 'MEMCACHE_TLS_CACERT'),
  row('MEMCACHE_TLS_CLIENT_CERT', '', 'same', 'MEMCACHE_TLS_CLIENT_CERT'),
  row('MEMCACHE_TLS_CLIENT_KEY', '', 'same', 'MEMCACHE_TLS_CLIENT_KEY'),
  row('MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION', 'false', 'same', 'MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION (the chain is still verified)'),
  // tracing (docs/tracing.md): the same names; set, each wins over its standard OTEL_* counterpart
  row('TRACING_ENABLED', 'false', 'same', "TRACING_ENABLED: a span per ShouldRateLimit, ext_authz Check and POST /json call, under the caller's trace"),
  row('TRACING_SERVICE_NAME', 'RateLimit', 'same', 'TRACING_SERVICE_NAME (unset: OTEL_SERVICE_NAME, then `RateLimit`)'),
  row('TRACING_SERVICE_NAMESPACE', '', 'same', 'TRACING_SERVICE_NAMESPACE (empty: no `service.namespace` attribute)'),
  row('TRACING_SERVICE_INSTANCE_ID', '', 'same', 'TRACING_SERVICE_INSTANCE_ID (empty: a random UUID per process)'),
  row(
    'TRACING_EXPORTER_PROTOCOL',
    'http',
    'same',
    'TRACING_EXPORTER_PROTOCOL: http (OTLP/HTTP protobuf) or grpc; the collector from OTEL_EXPORTER_OTLP_ENDPOINT',
  ),
  row('TRACING_SAMPLING_RATE', '1', 'same', "TRACING_SAMPLING_RATE, parent-based: Envoy's sampling decision is followed"),
];

export const REFERENCE_BY_NAME: ReadonlyMap<string, ReferenceSetting> = new Map(REFERENCE_SETTINGS.map((s) => [s.name, s]));

/** Endpoints, metrics and the command line of the reference, and ours (docs/switching.md). */
export const REFERENCE_ENDPOINTS: readonly (readonly [string, string])[] = [
  ['gRPC `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` (GRPC_PORT)', 'the same, same port'],
  ['gRPC `grpc.health.v1.Health/Check`', 'the same (also Watch and List; service names "", `ratelimit`)'],
  ['HTTP `GET /healthcheck` (PORT): 200 `OK` or 500', 'the same on HTTP_PORT (PORT is read as HTTP_PORT); also `/healthz` (alive) and `/readyz`'],
  ['HTTP `POST /json` (PORT)', 'the same on HTTP_PORT'],
  [
    'debug `GET /rlconfig` (DEBUG_PORT): the loaded rules as text',
    'the same on DEBUG_PORT (off unless DEBUG_PORT is set); `/rules` on HTTP_PORT gives them as JSON',
  ],
  ['debug `GET /stats` (DEBUG_PORT): statsd counters as text', '`/stats` on DEBUG_PORT gives the Prometheus text'],
  ['debug `GET /debug/pprof/*`', 'not offered (use `node --inspect` or `--cpu-prof`)'],
  ['Prometheus `/metrics` on PROMETHEUS_ADDR (USE_PROMETHEUS=true)', 'the same; `/metrics` is also always on HTTP_PORT'],
];

export const REFERENCE_METRICS: readonly (readonly [string, string])[] = [
  [
    '`ratelimit.service.rate_limit.DOMAIN.KEY.total_hits`',
    '`ratelimit_hits_total{domain,key}`; with statsd (USE_STATSD, USE_DOG_STATSD) the same stat; under its Prometheus name as well: `ratelimit_service_rate_limit_total_hits{domain,key1,key2}`',
  ],
  [
    '`ratelimit.service.rate_limit.DOMAIN.KEY.over_limit`',
    '`ratelimit_over_limit_total{domain,key}`; with statsd (USE_STATSD, USE_DOG_STATSD) the same stat; under its Prometheus name as well: `ratelimit_service_rate_limit_over_limit{domain,key1,key2}`',
  ],
  [
    '`ratelimit.service.rate_limit.DOMAIN.KEY.near_limit`',
    '`ratelimit_near_limit_total{domain,key}`; with statsd (USE_STATSD, USE_DOG_STATSD) the same stat; under its Prometheus name as well: `ratelimit_service_rate_limit_near_limit{domain,key1,key2}`',
  ],
  [
    '`ratelimit.service.rate_limit.DOMAIN.KEY.within_limit`',
    '`ratelimit_within_limit_total{domain,key}`; with statsd (USE_STATSD, USE_DOG_STATSD) the same stat; under its Prometheus name as well: `ratelimit_service_rate_limit_within_limit{domain,key1,key2}`',
  ],
  [
    '`ratelimit.service.rate_limit.DOMAIN.KEY.shadow_mode`',
    '`ratelimit_shadow_mode_total{domain,key}`; with statsd (USE_STATSD, USE_DOG_STATSD) the same stat; under its Prometheus name as well: `ratelimit_service_rate_limit_shadow_mode{domain,key1,key2}`',
  ],
  ['`ratelimit.service.rate_limit.DOMAIN.KEY.over_limit_with_local_cache`', '`ratelimit_over_limit_cache_hits_total`'],
  [
    '`ratelimit.service.config_load_success` / `config_load_error`',
    'the same stats (statsd, or `ratelimit_service_config_load_{success,error}` through a mapping); `ratelimit_config_reloads_total{result}`, `ratelimit_config_last_reload_success`',
  ],
  ['`ratelimit.service.global_shadow_mode`', '`ratelimit_shadow_mode_total` (SHADOW_MODE counts there)'],
  [
    '`ratelimit.service.call.should_rate_limit.redis_error` / `service_error`',
    'the same stats (`ratelimit_service_should_rate_limit_error{err_type}` through a mapping); `ratelimit_store_fallbacks_total{mode}`, `ratelimit_grpc_errors_total{code}`',
  ],
  [
    '`ratelimit_server.METHOD.total_requests` / `response_time`',
    'the same stats (`ratelimit_service_total_requests{grpc_method}`, `ratelimit_service_response_time_seconds{grpc_method}` through a mapping); `ratelimit_grpc_request_duration_seconds{method}` (queueing included), `ratelimit_decision_duration_seconds`',
  ],
  [
    '`ratelimit.go.*`, `ratelimit.redis_pool.*` (Go runtime, Redis pool)',
    '`ratelimit_process_*`, `ratelimit_nodejs_*`, `process_*`; `ratelimit_redis_*` (docs/metrics-reference.md)',
  ],
];

export const REFERENCE_CLI: readonly (readonly [string, string])[] = [
  ['`/bin/ratelimit` (settings from the environment)', '`ratelimit serve` (settings from the environment or `--flags`; `ratelimit serve --help` lists them)'],
  [
    '`/bin/ratelimit_client -dial_string HOST:PORT -domain D -descriptors k=v,k2=v2`',
    '`ratelimit query --spend --server HOST:PORT --domain D k=v,k2=v2` (`--json` for JSON; without `--spend` a dry run that counts nothing)',
  ],
  ['`/bin/ratelimit_config_check -config_dir DIR`', '`ratelimit check DIR`'],
  ['(none)', '`ratelimit --version`'],
];

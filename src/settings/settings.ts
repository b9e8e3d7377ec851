/**
 * Every setting of the service, declared once: env var, command-line flag, default, description and parser.
 * Only the composition root (app/start-service.ts, cli/main.ts) calls loadSettings(); nothing else reads process.env.
 * The settings table of docs/settings.md is checked against this list by a test.
 */
import { DEFAULT_REQUEST_LIMITS as LIMITS } from '../vocab/request-limits.js';

import { rereads, translateReferenceEnv, type Notice } from '../compat/translate.js';
import type { LogLevel } from '../observability/log.js';
import { STATS_SETTINGS } from './stats-settings.js';
import { parseGoDuration, XDS_SETTINGS } from './xds-settings.js';
import { misspeltEnvNotices } from './env-typos.js';
import { REFERENCE_BY_NAME } from '../compat/reference-settings.js';
import { TRACING_SETTINGS } from './tracing-settings.js';
import { MEMCACHED_SETTINGS } from './memcached-settings.js';
import { REDIS_PERSECOND_SETTINGS } from './redis-persecond-settings.js';

export type { Notice };

type Parser<T> = (raw: string) => T;

export interface SettingSpec<T> {
  readonly env: string;
  readonly default: T;
  readonly description: string;
  readonly parse: Parser<T>;
  /** Shown in the settings table: the accepted values. */
  readonly type: string;
  /** The default as the docs write it, when not the parsed value (a duration: `3s`, not 3000). */
  readonly shown?: string;
}

/** A setting's default as `serve --help` and the settings table show it: `(none)` when unset, `""` when empty. */
export function defaultText(s: Pick<SettingSpec<unknown>, 'default' | 'shown'>): string {
  if (s.shown !== undefined) return s.shown;
  const d = s.default as string | number | boolean | readonly string[] | undefined;
  const text = d === undefined ? '(none)' : Array.isArray(d) ? (d.length === 0 ? '(none)' : d.join(',')) : String(d);
  return text === '' ? '""' : text;
}

function spec<T>(env: string, type: string, def: T, description: string, parse: Parser<T>): SettingSpec<T> {
  return { env, type, default: def, description, parse };
}

const str = (env: string, def: string, description: string) => spec(env, 'string', def, description, (s) => s);

function int(env: string, def: number, description: string, min = 0, max = Number.MAX_SAFE_INTEGER) {
  return spec(env, min === 0 ? 'integer ≥ 0' : `integer ≥ ${min}`, def, description, (s) => {
    if (!/^\d+$/.test(s.trim())) throw new Error(`'${s}' is not a whole number`);
    const n = Number(s.trim());
    if (n < min || n > max) throw new Error(`${n} is out of range ${min}..${max}`);
    return n;
  });
}

function bool(env: string, def: boolean, description: string) {
  return spec(env, 'true | false', def, description, (s) => {
    const v = s.trim().toLowerCase();
    if (['true', '1', 'yes', 'on'].includes(v)) return true;
    if (['false', '0', 'no', 'off', ''].includes(v)) return false;
    throw new Error(`'${s}' is not a boolean (true or false)`);
  });
}

function oneOf<const T extends string>(env: string, values: readonly T[], def: T, description: string) {
  return spec<T>(env, values.join(' \\| '), def, description, (s) => {
    const v = s.trim().toLowerCase();
    if (!(values as readonly string[]).includes(v)) throw new Error(`'${s}' is not one of ${values.join(', ')}`);
    return v as T;
  });
}

/** A Go duration (`24h`, `1m30s`, `500ms`), in ms, as envoyproxy/ratelimit reads its durations. */
function duration(env: string, def: string, description: string) {
  return { ...spec(env, 'duration (500ms, 10s, 1h)', parseGoDuration(def), description, parseGoDuration), shown: def };
}

function port(env: string, def: number, description: string) {
  return int(env, def, description, 0, 65_535);
}

function list(env: string, description: string) {
  return spec<string[]>(env, 'comma-separated list', [], description, (s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter((x) => x !== ''),
  );
}

export const SETTINGS = {
  grpcHost: str(
    'GRPC_HOST',
    '0.0.0.0',
    'Address the gRPC server (RateLimitService, ext_authz Authorization, Health) listens on; `unix:/path/to.sock` listens on a Unix domain socket instead (GRPC_PORT is then unused).',
  ),
  grpcPort: port('GRPC_PORT', 8081, 'gRPC port; 0 picks a free port (printed at start).'),
  // Kept as the octal text (shown as 660, not 432, in the docs); app/start-service.ts converts it.
  grpcUnixSocketMode: spec(
    'GRPC_UNIX_SOCKET_MODE',
    'octal file mode',
    '660',
    'Permissions of the Unix socket file (GRPC_HOST=unix:...): 660 lets owner and group connect.',
    (s) => {
      if (!/^0?[0-7]{3}$/.test(s.trim())) throw new Error(`'${s}' is not an octal file mode such as 660`);
      return s.trim().replace(/^0(?=\d{3}$)/, '');
    },
  ),
  grpcTransport: oneOf(
    'GRPC_TRANSPORT',
    ['lean', 'grpc-js'] as const,
    'lean',
    'What serves the gRPC port: lean, gRPC on node:http2 with codecs written for its messages, the only transport. grpc-js is accepted, with a warning at start, and served by lean (docs/development.md, "The gRPC transport").',
  ),
  grpcMaxConnections: int(
    'GRPC_MAX_CONNECTIONS',
    1000,
    'Most open HTTP/2 connections on the gRPC port; one more is sent GOAWAY (ENHANCE_YOUR_CALM) at once (docs/security.md).',
    1,
  ),
  grpcMaxStreamsPerConnection: int(
    'GRPC_MAX_STREAMS_PER_CONNECTION',
    1000,
    'Most concurrent calls on one gRPC connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS); more are refused with RST_STREAM REFUSED_STREAM, and Envoy opens another connection.',
    1,
    2 ** 31 - 1,
  ),
  grpcMaxSessionMemoryMb: int(
    'GRPC_MAX_SESSION_MEMORY_MB',
    32,
    'Most memory one gRPC connection may buffer (node:http2 maxSessionMemory), MiB; past it new streams are refused.',
    1,
    1024,
  ),
  grpcMessageTimeoutMs: int(
    'GRPC_MESSAGE_TIMEOUT_MS',
    10_000,
    'A call whose request message has not fully arrived this long after its headers is reset (RST_STREAM CANCEL).',
    1,
    2 ** 31 - 1,
  ),
  grpcIdleTimeoutMs: int(
    'GRPC_IDLE_TIMEOUT_MS',
    300_000,
    'A gRPC connection with no open call for this long is closed gracefully (GOAWAY NO_ERROR); Envoy reconnects when it needs to.',
    1000,
    2 ** 31 - 1,
  ),
  grpcMaxConnectionAge: duration(
    'GRPC_MAX_CONNECTION_AGE',
    '24h',
    'A gRPC connection this old (±10%, spread at random) is sent GOAWAY: its calls in flight are answered, and Envoy opens a new connection for its next calls, which the Service may give to a replica added since (docs/kubernetes.md). Over TLS, while on, every call costs 5–9% more CPU (docs/reliability.md). 0 = never.',
  ),
  grpcMaxConnectionAgeGrace: duration(
    'GRPC_MAX_CONNECTION_AGE_GRACE',
    '1h',
    'After GRPC_MAX_CONNECTION_AGE, how long calls still open on the aged connection may run before it is closed. 0 = no bound.',
  ),
  grpcMaxWatchStreams: int('GRPC_MAX_WATCH_STREAMS', 1000, 'Most open grpc.health.v1 Watch calls; one more is answered RESOURCE_EXHAUSTED.', 1),
  grpcResetBurst: int(
    'GRPC_RESET_BURST',
    1000,
    "Rapid reset guard: streams one gRPC connection may reset (RST_STREAM) at once before GRPC_RESET_RATE_PER_S applies; past it that connection gets GOAWAY (its calls in flight are answered) and the client's next connection is accepted (docs/security.md).",
    1,
  ),
  grpcResetRatePerS: int(
    'GRPC_RESET_RATE_PER_S',
    100,
    'Rapid reset guard: resets per second one gRPC connection may sustain (refill of its GRPC_RESET_BURST).',
    1,
  ),
  grpcResetRefuseAddress: bool(
    'GRPC_RESET_REFUSE_ADDRESS',
    false,
    'Rapid reset guard: also count resets per client address and close new connections from an address past its burst until half has refilled. Behind Envoy this refuses Envoy itself when a client resets streams at Envoy, and every request then passes unlimited (failure_mode_deny: false): only for a gRPC port that untrusted clients reach directly.',
  ),
  workers: int(
    'WORKERS',
    1,
    'Processes serving the same ports (node:cluster), one per core to use; above 1 needs BACKEND=redis (the memory store would count per worker). Metrics on the admin port are those of the worker that answers the scrape.',
    1,
    256,
  ),
  heapGrowingPercent: int(
    'HEAP_GROWING_PERCENT',
    25,
    "How far V8's old generation may grow past what survived the last full collection before the next one, in % (V8's --heap-growing-percent; 0 leaves V8's own factor). Lower keeps resident memory under load lower for a little more GC CPU (docs/performance.md#footprint-start-up-rest-and-memory-beside-envoyproxyratelimit).",
    0,
    1000,
  ),
  grpcTlsCert: str('GRPC_TLS_CERT', '', 'gRPC TLS: PEM certificate chain file of the server; with GRPC_TLS_KEY turns TLS on. Reloaded when the file changes.'),
  grpcTlsKey: str('GRPC_TLS_KEY', '', 'gRPC TLS: PEM private key file matching GRPC_TLS_CERT.'),
  grpcTlsClientCa: str(
    'GRPC_TLS_CLIENT_CA',
    '',
    'gRPC mutual TLS: PEM file of the CA(s) client certificates must chain to; when set, clients without a valid certificate are refused.',
  ),
  grpcTlsClientSan: str(
    'GRPC_TLS_CLIENT_SAN',
    '',
    'gRPC mutual TLS (with GRPC_TLS_CLIENT_CA): the name (or IP address) a client certificate must carry as a subject alternative name; a connection whose certificate does not is closed after the handshake.',
  ),
  httpHost: str('HTTP_HOST', '0.0.0.0', 'Address of the HTTP admin server (health, metrics, /rules, /json).'),
  httpPort: port('HTTP_PORT', 8080, 'HTTP admin port; 0 picks a free port.'),
  configDir: str('CONFIG_DIR', './config', 'Directory of rule files (*.yaml, *.yml; dot-files and dot-directories skipped).'),
  configAllFiles: bool(
    'CONFIG_ALL_FILES',
    false,
    'Load every non-dot file of CONFIG_DIR and its non-dot subdirectories, whatever the extension, as envoyproxy/ratelimit does (set by RUNTIME_ROOT).',
  ),
  configDotFiles: bool(
    'CONFIG_DOT_FILES',
    false,
    "With CONFIG_ALL_FILES: files and subdirectories whose names start with a dot are rules too (set by RUNTIME_IGNOREDOTFILES=false). Kubernetes' ConfigMap entries (`..data`, `..2024_…`) never.",
  ),
  mergeDomainConfig: bool('MERGE_DOMAIN_CONFIG', false, 'Merge files that declare the same domain instead of rejecting them.'),
  configWatch: bool('CONFIG_WATCH', true, 'Reload the rules when the directory changes (Kubernetes ConfigMap swaps included).'),
  configDebounceMs: int('CONFIG_DEBOUNCE_MS', 250, 'Wait this long after the last file event before reloading.'),
  configPollIntervalMs: int('CONFIG_POLL_INTERVAL_MS', 30_000, 'Also re-read the directory this often, in case an event was missed; 0 disables.'),
  configMaxFileBytes: int('CONFIG_MAX_FILE_BYTES', 1024 * 1024, 'Largest rules file read, in bytes; a larger one is refused unread.', 1),
  ...XDS_SETTINGS,
  ...STATS_SETTINGS,
  ...TRACING_SETTINGS,
  configLoadTimeoutMs: int(
    'CONFIG_LOAD_TIMEOUT_MS',
    30_000,
    'A reload (read, parse, validate, in a worker thread) taking longer is abandoned and the worker killed.',
    1,
  ),
  backend: oneOf(
    'BACKEND',
    ['memory', 'redis', 'memcached'] as const,
    'memory',
    'Where counters live: the embedded in-memory store, Redis or memcached (fixed_window limits only, docs/memcached.md).',
  ),
  ...MEMCACHED_SETTINGS,
  memoryMaxKeys: int('MEMORY_MAX_KEYS', 1_000_000, 'Most keys the in-memory store holds (a second bound beside MEMORY_MAX_BYTES).', 1),
  memoryMaxBytes: int(
    'MEMORY_MAX_BYTES',
    64 * 1024 * 1024,
    "Most bytes the in-memory store's keys and states take (estimated per entry, see docs/memory.md); beyond it expired, then least recently used under-limit keys are evicted, never over-limit ones.",
    65_536,
  ),
  redisKeyFormat: oneOf(
    'REDIS_KEY_FORMAT',
    ['native', 'envoy'] as const,
    'native',
    "envoy: fixed_window limits with a unit use envoyproxy/ratelimit's counter keys and integer counters, so a rolling update from it keeps the counts (docs/switching-counters.md).",
  ),
  expirationJitterMaxSeconds: int(
    'EXPIRATION_JITTER_MAX_SECONDS',
    300,
    "REDIS_KEY_FORMAT=envoy: each of envoyproxy/ratelimit's counters expires after its unit plus a random 0 to this many seconds, as the reference sets them, so that a window's keys do not all expire at once. 0 = exactly the unit.",
  ),
  cacheKeyPrefix: str('CACHE_KEY_PREFIX', 'rl:', 'Prefix of every counter key (share one Redis between deployments safely).'),
  redisUrl: str('REDIS_URL', 'redis://127.0.0.1:6379', 'Redis URL: redis:// or rediss:// (TLS), optional user:password@ (ACL) and /db.'),
  redisType: oneOf('REDIS_TYPE', ['single', 'sentinel', 'cluster'] as const, 'single', 'Redis topology.'),
  redisSentinelMaster: str('REDIS_SENTINEL_MASTER', 'mymaster', 'Sentinel: name of the monitored master.'),
  redisSentinelAddrs: list('REDIS_SENTINEL_ADDRS', 'Sentinel: host:port of the sentinels.'),
  redisSentinelPassword: str('REDIS_SENTINEL_PASSWORD', '', 'Sentinel: password of the sentinels themselves (if any).'),
  redisClusterNodes: list('REDIS_CLUSTER_NODES', 'Cluster: host:port seed nodes (default: the host of REDIS_URL).'),
  redisTlsCa: str('REDIS_TLS_CA', '', 'TLS: file with the CA certificate(s) to trust.'),
  redisTlsCert: str('REDIS_TLS_CERT', '', 'TLS: client certificate file (mutual TLS).'),
  redisTlsKey: str('REDIS_TLS_KEY', '', 'TLS: client key file (mutual TLS).'),
  redisTlsServername: str('REDIS_TLS_SERVERNAME', '', 'TLS: server name to verify (SNI), if not the host.'),
  redisTlsInsecure: bool('REDIS_TLS_INSECURE', false, 'TLS: skip certificate verification (never in production).'),
  redisTlsSkipHostnameVerification: bool(
    'REDIS_TLS_SKIP_HOSTNAME_VERIFICATION',
    false,
    "TLS: check that the server's certificate chains to REDIS_TLS_CA (or the system's CAs), but not the name it carries, as envoyproxy/ratelimit does with this setting (a Redis reached by an address its certificate does not name).",
  ),
  ...REDIS_PERSECOND_SETTINGS,
  redisConnectTimeoutMs: int('REDIS_CONNECT_TIMEOUT_MS', 1_000, 'Redis connect timeout.', 1),
  redisCommandTimeoutMs: int(
    'REDIS_COMMAND_TIMEOUT_MS',
    100,
    "Deadline of a decision (its Redis call included) when the caller sent no gRPC deadline; also the Redis health probe's timeout. A caller's deadline is never cut by it.",
    1,
  ),
  decisionMaxWaitMs: int(
    'DECISION_MAX_WAIT_MS',
    10_000,
    "Longest a decision waits (for Redis, or an on_limit delay) whatever gRPC deadline the caller sent; below it the caller's deadline less the margin is the deadline of the Redis call. Also the longest a capacity call waits for Redis (BACKEND=redis; then UNAVAILABLE).",
    1,
    600_000,
  ),
  redisStartup: oneOf(
    'REDIS_STARTUP',
    ['background', 'wait', 'fail'] as const,
    'background',
    'Redis unreachable or refusing (e.g. WRONGPASS, NOPERM) at start: serve by FAILURE_MODE at once and log the cause every 5 s (background); wait up to REDIS_STARTUP_TIMEOUT_MS first (wait); or exit with the cause after that wait (fail).',
  ),
  redisStartupTimeoutMs: int('REDIS_STARTUP_TIMEOUT_MS', 10_000, 'How long REDIS_STARTUP=wait|fail waits for Redis to decide successfully.', 1),
  redisHealthCheckActiveConnection: bool(
    'REDIS_HEALTH_CHECK_ACTIVE_CONNECTION',
    false,
    'GET /healthcheck also answers 500 while the counter store (Redis, or memcached) cannot decide, as GET /readyz does, as envoyproxy/ratelimit does with this setting. gRPC health follows the store whatever it says.',
  ),
  failureMode: oneOf(
    'FAILURE_MODE',
    ['open', 'closed', 'local'] as const,
    'open',
    'When Redis cannot answer in time: allow, reject, or decide locally at limit ÷ EXPECTED_REPLICAS.',
  ),
  expectedReplicas: int('EXPECTED_REPLICAS', 1, 'Replicas sharing the limits; FAILURE_MODE=local divides each limit by it.', 1),
  localCacheSize: int('LOCAL_CACHE_SIZE', 100_000, 'Entries of the in-process over-limit cache (Redis and memcached backends); 0 disables it.'),
  deadlineMarginMs: int(
    'DEADLINE_MARGIN_MS',
    2,
    "Least time kept before the caller's gRPC deadline; the margin grows with measured event-loop and send delay.",
  ),
  maxRequestBytes: int(
    'MAX_REQUEST_BYTES',
    LIMITS.maxMessageBytes,
    'Largest request: gRPC message or POST /json body, bytes (RESOURCE_EXHAUSTED / 413 beyond). Quota-stream reports (RLQS) have their own 4 MiB bound.',
    1,
    2 ** 31 - 1,
  ),
  maxRequestDescriptors: int('MAX_REQUEST_DESCRIPTORS', LIMITS.maxDescriptors, 'Most descriptors in one request.', 1),
  maxDescriptorEntries: int('MAX_DESCRIPTOR_ENTRIES', LIMITS.maxEntries, 'Most entries in one descriptor.', 1),
  maxKeyBytes: int('MAX_KEY_BYTES', LIMITS.maxKeyBytes, 'Longest descriptor entry key (and domain), bytes.', 1),
  maxValueBytes: int(
    'MAX_VALUE_BYTES',
    LIMITS.maxValueBytes,
    'Longest descriptor entry value taken as it is, bytes; a longer one is decided all the same (counted under a SHA-256 of it) and reported (ratelimit_oversized_input_total, a rate-limited log line).',
    1,
  ),
  maxHitsAddend: int(
    'MAX_HITS_ADDEND',
    LIMITS.maxHitsAddend,
    'Largest hits_addend taken as it is; a larger one counts as 4294967295 (over every limit) and is reported (ratelimit_oversized_input_total, a rate-limited log line).',
    1,
  ),
  authzDomain: str(
    'AUTHZ_DOMAIN',
    '',
    'ext_authz Check: the rules domain of a route whose context_extensions set no `ratelimit_domain`; empty: such requests are allowed untouched.',
  ),
  authzRegionHeaders: list(
    'AUTHZ_REGION_HEADERS',
    "ext_authz `region` action: trusted request headers carrying the client's country (e.g. cf-ipcountry, x-country-code), first non-empty wins, when the action names none. Only list headers your edge sets and strips from clients.",
  ),
  authzClientAddressHeader: str(
    'AUTHZ_CLIENT_ADDRESS_HEADER',
    '',
    'ext_authz: a request header holding the trusted client address, used instead of the TCP peer Envoy reports (attributes.source.address), e.g. x-client-address set by envoy-ext-authz.yaml from %DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT% (which honours xff_num_trusted_hops). Only name a header your Envoy overwrites on every request; empty: the TCP peer.',
  ),
  geoipDb: str(
    'GEOIP_DB',
    '',
    'ext_authz `region` action: a MaxMind-format (.mmdb) country or city database to look up the client address in (after the trusted headers); polled every 5 s, a changed file is used once it reads whole.',
  ),
  authzMaxHeaders: int(
    'AUTHZ_MAX_HEADERS',
    256,
    'ext_authz Check: most request headers (and context extensions) in one CheckRequest (RESOURCE_EXHAUSTED beyond).',
    1,
  ),
  rateLimitHeaders: oneOf(
    'RATELIMIT_HEADERS',
    ['all', 'limited', 'none'] as const,
    'all',
    "Where to add IETF RateLimit / RateLimit-Policy headers: every response, rejections only, or never (envoyproxy/ratelimit sends none: `none` answers as it does, with RETRY_AFTER_HEADER=false). retry-after is RETRY_AFTER_HEADER's.",
  ),
  retryAfterHeader: bool(
    'RETRY_AFTER_HEADER',
    true,
    "Add retry-after (seconds until the request would be admitted) to rejections; false leaves it out, as envoyproxy/ratelimit does (a rule's on_limit `retry: none` drops it for that rule alone).",
  ),
  xRateLimitHeaders: bool(
    'X_RATELIMIT_HEADERS',
    false,
    "Also add x-ratelimit-limit/-remaining/-reset (leave off if Envoy's enable_x_ratelimit_headers is on).",
  ),
  nearLimitRatio: spec('NEAR_LIMIT_RATIO', 'number in (0, 1]', 0.8, 'Hits above this share of a limit are counted as near_limit in metrics.', (s) => {
    const n = Number(s);
    if (!Number.isFinite(n) || n <= 0 || n > 1) throw new Error(`'${s}' is not a number in (0, 1]`);
    return n;
  }),
  metricsMaxDetailedSeries: int(
    'METRICS_MAX_DETAILED_SERIES',
    1_000,
    'Per domain, most distinct stats keys built from request values (detailed_metric, value_to_metric) kept as metric series; the rest count under key `other`.',
    0,
    1_000_000,
  ),
  responseDynamicMetadata: bool(
    'RESPONSE_DYNAMIC_METADATA',
    false,
    "Add dynamic_metadata to every RateLimitResponse, as envoyproxy/ratelimit does with this setting: the request's domain, descriptors and hits_addend, the matched rules' metadata, and (ours) quotaModeEnabled / quotaModeViolations when quota_mode rules matched (docs/responses.md).",
  ),
  jsonApi: oneOf(
    'JSON_API',
    ['off', 'check', 'on'] as const,
    'check',
    'POST /json on the admin port: off (404), check (answers as ShouldRateLimit would, consuming no quota) or on (consumes quota like a gRPC call).',
  ),
  shutdownDrainMs: int(
    'SHUTDOWN_DRAIN_MS',
    5_000,
    'On SIGTERM, report NOT_SERVING but keep answering for this long (so Envoy health checks notice), then refuse new calls.',
  ),
  logLevel: spec<LogLevel>(
    'LOG_LEVEL',
    'trace \\| debug \\| info \\| warn \\| error (any case; also warning, fatal, panic)',
    'info',
    'Least severe log level written.',
    parseLogLevel,
  ),
  logFormat: oneOf('LOG_FORMAT', ['json', 'text'] as const, 'json', 'Log lines as JSON objects or plain text.'),
  shadowMode: bool('SHADOW_MODE', false, 'Every limit in shadow mode: counted, reported and logged in metrics, never rejecting.'),
  quotaMode: bool(
    'QUOTA_MODE',
    false,
    'Every descriptor in quota mode, as `quota_mode: true` on every rule (docs/rules.md), as envoyproxy/ratelimit does with this setting: a descriptor over its limit reads OVER_LIMIT, and the request is rejected only when every descriptor of it (unlimited ones aside; those no rule matches count as within) is over.',
  ),
  criticalityKey: spec(
    'CRITICALITY_KEY',
    'string (non-empty)',
    'criticality',
    "Descriptor entries with this key are removed before matching and give the request's criticality class (critical, default, sheddable) for a rule's `shares` (docs/throttling.md).",
    (s) => {
      if (s === '') throw new Error('must not be empty');
      return s;
    },
  ),
  limitResponseHeadersEnabled: bool(
    'LIMIT_RESPONSE_HEADERS_ENABLED',
    false,
    'Add the limit, remaining and reset headers of envoyproxy/ratelimit (names below) to every response with a limit.',
  ),
  limitLimitHeader: str('LIMIT_LIMIT_HEADER', 'RateLimit-Limit', 'LIMIT_RESPONSE_HEADERS_ENABLED: name of the header with the limit.'),
  limitRemainingHeader: str('LIMIT_REMAINING_HEADER', 'RateLimit-Remaining', 'LIMIT_RESPONSE_HEADERS_ENABLED: name of the header with the remaining hits.'),
  limitResetHeader: str('LIMIT_RESET_HEADER', 'RateLimit-Reset', 'LIMIT_RESPONSE_HEADERS_ENABLED: name of the header with the seconds until reset.'),
  debugHost: str('DEBUG_HOST', '0.0.0.0', 'Address of the debug HTTP server (DEBUG_PORT).'),
  debugPort: spec<number | undefined>(
    'DEBUG_PORT',
    'port, or empty for off',
    undefined,
    'Debug HTTP port serving /rlconfig (rules as text), /stats, /rules; off unless set.',
    (s) => (s.trim() === '' ? undefined : port('DEBUG_PORT', 0, '').parse(s)),
  ),
  usePrometheus: bool('USE_PROMETHEUS', false, "Also serve the metrics on PROMETHEUS_ADDR (they are always on the HTTP port's /metrics)."),
  prometheusAddr: spec('PROMETHEUS_ADDR', '[host]:port', ':9090', 'USE_PROMETHEUS: listen address, e.g. :9090 or 127.0.0.1:9090.', (s) => {
    const m = /^(.*):(\d{1,5})$/.exec(s.trim());
    if (!m || Number(m[2]) > 65_535) throw new Error(`'${s}' is not [host]:port`);
    return s.trim();
  }),
  prometheusPath: spec('PROMETHEUS_PATH', 'path', '/metrics', 'USE_PROMETHEUS: path of the metrics.', (s) => {
    if (!s.startsWith('/')) throw new Error(`'${s}' does not start with /`);
    return s;
  }),
  capacityServer: list(
    'CAPACITY_SERVER',
    'Rules with `capacity:` limits: host:port of the capacity service (ours or Doorman) granting this replica its shares; several are tried in turn (docs/capacity-client.md). Empty: such limits keep their fallback.',
  ),
  capacityClientId: str(
    'CAPACITY_CLIENT_ID',
    '',
    "Rules with `capacity:` limits: this replica's client id at the capacity service (default host:pid:random; must differ between replicas).",
  ),
  capacityConfig: str(
    'CAPACITY_CONFIG',
    '',
    'Doorman resource file (YAML `resources:`); when set, the doorman.Capacity gRPC service is served on the gRPC port and the file is hot-reloaded (docs/capacity.md).',
  ),
  capacityParent: str(
    'CAPACITY_PARENT',
    '',
    "host:port of a parent capacity server (ours or Doorman); when set, each resource's capacity comes from the parent with GetServerCapacity, refreshed before expiry, falling to the parent's safe_capacity (or 0) when its lease runs out (docs/capacity.md).",
  ),
  capacityServerId: str(
    'CAPACITY_SERVER_ID',
    '',
    'CAPACITY_PARENT: the server_id this server asks its parent with (default: the gRPC address it listens on, as Doorman uses host:port).',
  ),
  capacityMaxLeases: int(
    'CAPACITY_MAX_LEASES',
    1_000_000,
    'Most capacity leases held over all resources (a bound on memory; with BACKEND=redis: per resource, in Redis); past it a new client is left out of the answer (RESOURCE_EXHAUSTED when nothing of the request is answered).',
    1,
  ),
  capacityMaxResources: int(
    'CAPACITY_MAX_RESOURCES',
    250_000,
    'Most capacity resources holding leases at once, per process (a bound on memory: a resource is dropped with its last lease); past it the new resources of a request are left out of the answer (RESOURCE_EXHAUSTED when nothing of it is answered).',
    1,
  ),
  capacityMaxRequestBytes: int(
    'CAPACITY_MAX_REQUEST_BYTES',
    4 * 1024 * 1024,
    "Largest doorman.Capacity request, bytes (a server asking for all its resources at once; gRPC's and Doorman's default); RESOURCE_EXHAUSTED beyond. The gRPC port then takes messages up to the larger of this and MAX_REQUEST_BYTES; RLS and ext_authz requests keep their descriptor, entry and key bounds.",
    1,
    2 ** 31 - 1,
  ),
  shutdownGraceMs: int('SHUTDOWN_GRACE_MS', 5_000, 'After the drain, finish in-flight calls for at most this long.'),
  rlqsAssignmentTtlS: int(
    'RLQS_ASSIGNMENT_TTL_S',
    30,
    'Rate Limit Quota Service: the TTL of every assignment, whole seconds: how long an Envoy keeps enforcing its share with this service gone, before its expired_assignment_behavior (docs/rlqs.md).',
    1,
    86_400,
  ),
  rlqsIdleAbandonS: int(
    'RLQS_IDLE_ABANDON_S',
    120,
    'Rate Limit Quota Service: a bucket an Envoy reports without requests for this long is abandoned on that Envoy, freeing its share (docs/rlqs.md).',
    5,
    86_400,
  ),
  // Who is being limited: GET /top and the status page (src/top/top-keys.ts, docs/operations.md).
  topKeys: int(
    'TOP_KEYS',
    10,
    'Top limited keys kept per rule (rejected, and near the limit) over the last 5 minutes, for GET /top and the status page; 0 turns them off.',
    0,
    1000,
  ),
  topRules: int('TOP_RULES', 100, 'Rules whose top limited keys are kept at once; a new one evicts the rule least recently limited.', 1, 10_000),
  topValues: oneOf(
    'TOP_VALUES',
    ['plain', 'hash', 'hide'] as const,
    'plain',
    'Descriptor values in GET /top and the status page: as sent (plain), as the first 16 hex digits of their SHA-256 (hash), or *** (hide: counts per rule only).',
  ),
} as const;

/** LOG_LEVEL as either implementation spells it: ours, or logrus's (WARN, warning, trace, fatal, panic). */
function parseLogLevel(raw: string): LogLevel {
  const v = raw.trim().toLowerCase();
  if (v === 'trace' || v === 'debug' || v === 'info' || v === 'warn' || v === 'error') return v;
  if (v === 'warning') return 'warn';
  if (v === 'fatal' || v === 'panic') return 'error';
  throw new Error(`'${raw}' is not one of trace, debug, info, warn, warning, error, fatal, panic`);
}

export type SettingName = keyof typeof SETTINGS;
export type Settings = { readonly [K in SettingName]: (typeof SETTINGS)[K]['default'] };

/** `GRPC_PORT` → `--grpc-port`. */
export function flagName(env: string): string {
  return `--${env.toLowerCase().replaceAll('_', '-')}`;
}

export class SettingsError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid settings:\n  ${problems.join('\n  ')}`);
    this.name = 'SettingsError';
  }
}

/**
 * Reads every setting from flags (`--grpc-port 9000` or `--grpc-port=9000`; a boolean flag alone means true),
 * then env vars (ours, and envoyproxy/ratelimit's names translated by compat/translate.ts), then defaults.
 * A reference name and ours that disagree, unknown flags and bad values are all reported at once in a
 * SettingsError. Returns the settings, the arguments that are not flags (e.g. the directory of `check DIR`)
 * and the notices to log at start about reference settings (unsupported ones by name, with what to do), and
 * which settings were given at all (flag, env var or a reference name), for settings-checks.ts.
 */
export function loadSettings(
  env: Readonly<Record<string, string | undefined>>,
  argv: readonly string[] = [],
): { settings: Settings; rest: string[]; notices: Notice[]; given: ReadonlySet<SettingName> } {
  const byFlag = new Map<string, SettingName>();
  for (const name of Object.keys(SETTINGS) as SettingName[]) byFlag.set(flagName(SETTINGS[name].env), name);

  const problems: string[] = [];
  const fromFlags = new Map<SettingName, string>();
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) {
      rest.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    const name = byFlag.get(flag);
    if (name === undefined) {
      rest.push(arg); // the subcommand may know it (e.g. `query --domain`)
      continue;
    }
    let value: string | undefined = eq === -1 ? undefined : arg.slice(eq + 1);
    if (value === undefined) {
      const next = argv[i + 1];
      const isBool = typeof SETTINGS[name].default === 'boolean';
      if (next !== undefined && !next.startsWith('--') && (!isBool || /^(true|false|1|0|yes|no|on|off)$/i.test(next))) {
        value = next;
        i++;
      } else if (isBool) value = 'true';
      else {
        problems.push(`${flag}: needs a value`);
        continue;
      }
    }
    fromFlags.set(name, value);
  }

  const reference = translateReferenceEnv(env);
  problems.push(...reference.problems);
  const settings: Record<string, unknown> = {};
  const given = new Set<SettingName>();
  for (const name of Object.keys(SETTINGS) as SettingName[]) {
    const s = SETTINGS[name] as SettingSpec<unknown>;
    const own = fromFlags.get(name) ?? env[s.env];
    const derived = reference.values.get(s.env);
    let raw = own;
    if (derived !== undefined && rereads(derived, s.env)) raw = fromFlags.get(name) ?? derived.value;
    else if (derived !== undefined) {
      const same = own === undefined || sameValue(s, own, derived.value);
      if (same === false) {
        const source = fromFlags.has(name) ? flagName(s.env) : s.env;
        problems.push(`${derived.from} (envoyproxy/ratelimit) means ${s.env}=${derived.value}, but ${source} is '${own}': set only one of them`);
        continue;
      }
      // Agreeing, or one of them does not parse: parse the derived value when ours is absent or fine, so that a
      // bad value is reported by its parser (below), not as a disagreement.
      if (own === undefined || (same === undefined && parses(s, own))) raw = derived.value;
    }
    if (raw === undefined) {
      settings[name] = s.default;
      continue;
    }
    given.add(name);
    try {
      settings[name] = s.parse(raw);
    } catch (err) {
      const source = raw === own && fromFlags.has(name) ? flagName(s.env) : s.env;
      problems.push(`${source}: ${(err as Error).message}`);
    }
  }
  if (problems.length > 0) throw new SettingsError(problems);
  const known = new Set([...Object.values(SETTINGS).map((s) => s.env), ...REFERENCE_BY_NAME.keys()]);
  const notices = [...reference.notices, ...misspeltEnvNotices(env, known)];
  return { settings: Object.freeze(settings) as Settings, rest, notices, given };
}

/** Whether two raw values mean the same; undefined when one does not parse (loadSettings then reports it). */
function sameValue(s: SettingSpec<unknown>, a: string, b: string): boolean | undefined {
  try {
    return JSON.stringify(s.parse(a)) === JSON.stringify(s.parse(b));
  } catch {
    return undefined;
  }
}

function parses(s: SettingSpec<unknown>, raw: string): boolean {
  try {
    s.parse(raw);
    return true;
  } catch {
    return false;
  }
}

/**
 * The settings of rules delivered over xDS, with envoyproxy/ratelimit's names and meanings (its
 * src/settings/settings.go: CONFIG_TYPE, FORCE_START_WITHOUT_INITIAL_CONFIG, HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED,
 * CONFIG_GRPC_XDS_*, XDS_CLIENT_*). Spread into SETTINGS (settings.ts); docs/xds.md explains them.
 */
/** The shape of settings.ts's SettingSpec (not imported: settings.ts imports this module). */
export interface Spec<T> {
  readonly env: string;
  readonly default: T;
  readonly description: string;
  readonly parse: (raw: string) => T;
  readonly type: string;
}

export function spec<T>(env: string, type: string, def: T, description: string, parse: (raw: string) => T): Spec<T> {
  return { env, type, default: def, description, parse };
}

const str = (env: string, def: string, description: string) => spec(env, 'string', def, description, (s) => s.trim());

export function bool(env: string, def: boolean, description: string) {
  return spec(env, 'true | false', def, description, (s) => {
    const v = s.trim().toLowerCase();
    if (['true', '1', 'yes', 'on', 't'].includes(v)) return true;
    if (['false', '0', 'no', 'off', 'f', ''].includes(v)) return false;
    throw new Error(`'${s}' is not a boolean (true or false)`);
  });
}

const GO_UNITS_MS: Readonly<Record<string, number>> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A Go duration (`10s`, `500ms`, `1m30s`, `0`) in milliseconds, as the reference's envconfig reads it. */
export function parseGoDuration(raw: string): number {
  const s = raw.trim();
  if (s === '0') return 0;
  const parts = [...s.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/g)];
  if (s === '' || parts.map((p) => p[0]).join('') !== s) throw new Error(`'${raw}' is not a duration such as 500ms, 10s or 1m30s`);
  const ms = parts.reduce((sum, p) => sum + Number(p[1]) * GO_UNITS_MS[p[2]!]!, 0);
  if (!Number.isFinite(ms) || ms > 2 ** 31 - 1) throw new Error(`'${raw}' is too long`);
  return Math.round(ms);
}

const duration = (env: string, def: string, description: string) => spec(env, 'duration (500ms, 10s, 1m)', parseGoDuration(def), description, parseGoDuration);

/** `k1=v1,k2=v2` (CONFIG_GRPC_XDS_NODE_METADATA): as the reference, entries without `=` are skipped. */
export function parseNodeMetadata(raw: string): ReadonlyMap<string, string> {
  const out = new Map<string, string>();
  for (const entry of raw.split(',')) {
    const eq = entry.indexOf('=');
    if (eq !== -1) out.set(entry.slice(0, eq), entry.slice(eq + 1));
  }
  return out;
}

/** `k1:v1,k2:v2` (CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS, a Go envconfig map): an entry without `:` is an error. */
export function parseHeaderMap(raw: string): ReadonlyMap<string, string> {
  const out = new Map<string, string>();
  if (raw.trim() === '') return out;
  for (const entry of raw.split(',')) {
    const colon = entry.indexOf(':');
    if (colon === -1) throw new Error(`'${entry}' is not key:value`);
    const key = entry.slice(0, colon).trim().toLowerCase();
    if (!/^[0-9a-z_.-]+$/.test(key)) throw new Error(`'${key}' is not a valid header name`);
    out.set(key, entry.slice(colon + 1).trim());
  }
  return out;
}

export const XDS_SETTINGS = {
  configType: spec<'FILE' | 'GRPC_XDS_SOTW'>(
    'CONFIG_TYPE',
    'FILE \\| GRPC_XDS_SOTW',
    'FILE',
    'Where the rules come from: FILE (CONFIG_DIR) or GRPC_XDS_SOTW (an xDS server, state of the world over ADS; docs/xds.md).',
    (s) => {
      const v = s.trim().toUpperCase();
      if (v !== 'FILE' && v !== 'GRPC_XDS_SOTW') throw new Error(`'${s}' is not one of FILE, GRPC_XDS_SOTW`);
      return v;
    },
  ),
  forceStartWithoutInitialConfig: bool(
    'FORCE_START_WITHOUT_INITIAL_CONFIG',
    false,
    'GRPC_XDS_SOTW: be ready at once, with no rules (every request answered OK) until the first set arrives; otherwise readiness waits for the first set.',
  ),
  healthyWithAtLeastOneConfigLoaded: bool(
    'HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED',
    false,
    'Health (gRPC, /healthcheck, /readyz) reports not serving while the rules in force hold no domain, as envoyproxy/ratelimit does with this setting.',
  ),
  xdsNodeId: str(
    'CONFIG_GRPC_XDS_NODE_ID',
    'default',
    'GRPC_XDS_SOTW: the node id sent to the xDS server (the server keys its snapshot by it; Envoy Gateway: envoy-ratelimit).',
  ),
  xdsNodeMetadata: spec(
    'CONFIG_GRPC_XDS_NODE_METADATA',
    'key=value,...',
    '',
    'GRPC_XDS_SOTW: node metadata sent to the xDS server, string values; entries without `=` are skipped.',
    (s) => s,
  ),
  xdsServerUrl: str('CONFIG_GRPC_XDS_SERVER_URL', 'localhost:18000', 'GRPC_XDS_SOTW: host:port of the xDS server (Envoy Gateway: envoy-gateway:18001).'),
  xdsServerConnectRetryInterval: duration(
    'CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL',
    '3s',
    'GRPC_XDS_SOTW: read and checked for compatibility; reconnects are paced by XDS_CLIENT_BACKOFF_* (docs/xds.md).',
  ),
  xdsClientAdditionalHeaders: spec(
    'CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS',
    'key:value,...',
    '',
    'GRPC_XDS_SOTW: gRPC metadata sent on the xDS stream.',
    (s) => {
      parseHeaderMap(s);
      return s;
    },
  ),
  xdsServerUseTls: bool('CONFIG_GRPC_XDS_SERVER_USE_TLS', false, 'GRPC_XDS_SOTW: connect to the xDS server over TLS.'),
  xdsClientTlsCert: str(
    'CONFIG_GRPC_XDS_CLIENT_TLS_CERT',
    '',
    'GRPC_XDS_SOTW with TLS: PEM client certificate file (mutual TLS; with CONFIG_GRPC_XDS_CLIENT_TLS_KEY). Re-read at every connection.',
  ),
  xdsClientTlsKey: str('CONFIG_GRPC_XDS_CLIENT_TLS_KEY', '', 'GRPC_XDS_SOTW with TLS: PEM key file of the client certificate.'),
  xdsServerTlsCaCert: str(
    'CONFIG_GRPC_XDS_SERVER_TLS_CACERT',
    '',
    "GRPC_XDS_SOTW with TLS: PEM file of the CA the server's certificate must chain to (default: the system's CAs).",
  ),
  xdsServerTlsSan: str(
    'CONFIG_GRPC_XDS_SERVER_TLS_SAN',
    '',
    "GRPC_XDS_SOTW with TLS: the name the server's certificate must carry, when not the host of the URL.",
  ),
  xdsBackoffInitialInterval: duration(
    'XDS_CLIENT_BACKOFF_INITIAL_INTERVAL',
    '500ms',
    "GRPC_XDS_SOTW: first wait before reconnecting to the xDS server; each failed attempt doubles it up to XDS_CLIENT_BACKOFF_MAX_INTERVAL (envoyproxy/ratelimit's default is 10s).",
  ),
  xdsBackoffMaxInterval: duration('XDS_CLIENT_BACKOFF_MAX_INTERVAL', '60s', 'GRPC_XDS_SOTW: longest wait before reconnecting.'),
  xdsBackoffRandomFactor: spec(
    'XDS_CLIENT_BACKOFF_RANDOM_FACTOR',
    'number in [0, 1]',
    0.5,
    'GRPC_XDS_SOTW with XDS_CLIENT_BACKOFF_JITTER: each wait is spread by ± this share of itself.',
    (s) => {
      const n = Number(s.trim());
      if (s.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1) throw new Error(`'${s}' is not a number in [0, 1]`);
      return n;
    },
  ),
  xdsBackoffJitter: bool('XDS_CLIENT_BACKOFF_JITTER', true, 'GRPC_XDS_SOTW: spread the reconnect waits at random.'),
  xdsKeepaliveTime: duration(
    'XDS_CLIENT_KEEPALIVE_TIME',
    '30s',
    'GRPC_XDS_SOTW: interval of the HTTP/2 pings that check the xDS server still answers; 0 turns them off. A server that finds them too frequent (GOAWAY too_many_pings) gets them half as often from the next connection on.',
  ),
  xdsKeepaliveTimeout: duration(
    'XDS_CLIENT_KEEPALIVE_TIMEOUT',
    '10s',
    'GRPC_XDS_SOTW: how long a ping may go unanswered before the xDS server is taken for dead and the stream reopened.',
  ),
  xdsMaxMsgSizeInBytes: spec(
    'XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES',
    'integer ≥ 0, or empty',
    0,
    'GRPC_XDS_SOTW: largest xDS response accepted, bytes; empty or 0: 4 MiB.',
    (s) => {
      if (s.trim() === '') return 0;
      if (!/^\d+$/.test(s.trim()) || Number(s) > 2 ** 31 - 1) throw new Error(`'${s}' is not a whole number of bytes`);
      return Number(s.trim());
    },
  ),
} as const;

/**
 * Reads an envoyproxy/ratelimit environment (reference-settings.ts) as our settings: returns the values of
 * our env vars that the reference names imply, the problems that must stop the start (values it cannot honour
 * or read), and one notice per reference-only setting that is set (nothing is silently ignored). Pure:
 * settings.ts applies the values and checks them against our own names.
 */
import { posix } from 'node:path';
import { parseGoDuration } from '../vocab/go-duration.js';
import { redactUrl } from '../vocab/redact.js';
import { REFERENCE_SETTINGS } from './reference-settings.js';

export interface Notice {
  readonly level: 'info' | 'warn';
  /** The reference setting(s) concerned. */
  readonly setting: string;
  readonly message: string;
}

export interface Derived {
  readonly value: string;
  /** The reference setting(s) it comes from, for messages. When it equals the target's own name the
   *  reference value of that same variable was re-read (e.g. REDIS_URL=host:port), not a second source. */
  readonly from: string;
}

export interface Translation {
  /** Our env var name → its value implied by reference settings. */
  readonly values: Map<string, Derived>;
  readonly notices: Notice[];
  readonly problems: string[];
}

type Env = Readonly<Record<string, string | undefined>>;

const RUNTIME_DEFAULT_ROOT = '/srv/runtime_data/current';
const HOST_PORT = /^(?:\[[^\]]+\]|[^:,/\s]+):\d{1,5}$/;

export function translateReferenceEnv(env: Env): Translation {
  const values = new Map<string, Derived>();
  const notices: Notice[] = [];
  const problems: string[] = [];
  const set = (ours: string, value: string, from: string) => values.set(ours, { value, from });

  for (const s of REFERENCE_SETTINGS) {
    const v = env[s.name];
    if (v === undefined || s.status === 'same' || s.status === 'mapped') continue;
    if (s.accepts?.(v)) notices.push({ level: 'info', setting: s.name, message: `${s.name}=${v}: nothing to do here (${s.here})` });
    else if (s.fatal) problems.push(`${s.name}=${v}: ${s.here}`);
    else notices.push({ level: 'info', setting: s.name, message: `${s.name}=${v}: already so here (${s.here})` });
  }

  if (env.HOST !== undefined) set('HTTP_HOST', env.HOST, 'HOST');
  if (env.PORT !== undefined) set('HTTP_PORT', env.PORT, 'PORT');

  const runtime = ['RUNTIME_ROOT', 'RUNTIME_SUBDIRECTORY', 'RUNTIME_APPDIRECTORY'];
  if (runtime.some((n) => env[n] !== undefined)) {
    const dir = posix.join(env.RUNTIME_ROOT ?? RUNTIME_DEFAULT_ROOT, env.RUNTIME_SUBDIRECTORY ?? '', env.RUNTIME_APPDIRECTORY ?? 'config');
    const from = runtime.filter((n) => env[n] !== undefined).join('+');
    set('CONFIG_DIR', dir, from);
    set('CONFIG_ALL_FILES', 'true', from);
    notices.push({
      level: 'info',
      setting: from,
      message: `rules from ${dir} (${from}), every non-dot file whatever its extension, as the reference loads them`,
    });
    if (env.DEBUG_PORT === undefined) {
      notices.push({
        level: 'warn',
        setting: 'DEBUG_PORT',
        message: 'DEBUG_PORT is unset: /rlconfig and /stats are off here (the reference serves them on 6070 by default); set DEBUG_PORT=6070 to keep them',
      });
    }
    // Unset, dot files are skipped here (an editor's swap file is no rule file); the reference loads them.
    if (env.RUNTIME_IGNOREDOTFILES === undefined) {
      notices.push({
        level: 'info',
        setting: 'RUNTIME_IGNOREDOTFILES',
        message: `dot files and dot directories of ${dir} are skipped, as the reference does with RUNTIME_IGNOREDOTFILES=true (unset, it loads them: set RUNTIME_IGNOREDOTFILES=false for that)`,
      });
    } else {
      const ignore = goBool(env.RUNTIME_IGNOREDOTFILES);
      if (ignore === undefined) problems.push(`RUNTIME_IGNOREDOTFILES: '${env.RUNTIME_IGNOREDOTFILES}' is not a boolean (true or false)`);
      else if (!ignore) set('CONFIG_DOT_FILES', 'true', 'RUNTIME_IGNOREDOTFILES');
    }
  }

  if (env.BACKEND_TYPE !== undefined) {
    const b = env.BACKEND_TYPE.trim().toLowerCase();
    if (b === 'redis') set('BACKEND', 'redis', 'BACKEND_TYPE');
    else if (b === 'memcache') {
      set('BACKEND', 'memcached', 'BACKEND_TYPE');
      if (env.MEMCACHE_KEY_FORMAT === undefined) {
        notices.push({
          level: 'info',
          setting: 'BACKEND_TYPE',
          message:
            "BACKEND_TYPE=memcache: counters in memcached under this service's own keys; during a rolling switch from the reference set MEMCACHE_KEY_FORMAT=envoy (and CACHE_KEY_PREFIX to the reference's, empty by default) to count into its items (docs/memcached.md)",
        });
      }
    } else problems.push(`BACKEND_TYPE: '${env.BACKEND_TYPE}' is not one of redis, memcache`);
  }

  if (env.LOCAL_CACHE_SIZE_IN_BYTES !== undefined) {
    const text = env.LOCAL_CACHE_SIZE_IN_BYTES.trim();
    if (!/^\d+$/.test(text)) problems.push(`LOCAL_CACHE_SIZE_IN_BYTES: '${text}' is not a whole number`);
    else set('LOCAL_CACHE_SIZE', String(Math.floor(Number(text) / 100)), 'LOCAL_CACHE_SIZE_IN_BYTES');
  }

  if (env.REDIS_SENTINEL_AUTH !== undefined) set('REDIS_SENTINEL_PASSWORD', env.REDIS_SENTINEL_AUTH, 'REDIS_SENTINEL_AUTH');
  if (env.REDIS_TLS_CACERT !== undefined) set('REDIS_TLS_CA', env.REDIS_TLS_CACERT, 'REDIS_TLS_CACERT');
  if (env.REDIS_TLS_CLIENT_CERT !== undefined) set('REDIS_TLS_CERT', env.REDIS_TLS_CLIENT_CERT, 'REDIS_TLS_CLIENT_CERT');
  if (env.REDIS_TLS_CLIENT_KEY !== undefined) set('REDIS_TLS_KEY', env.REDIS_TLS_CLIENT_KEY, 'REDIS_TLS_CLIENT_KEY');

  // GRPC_UDS replaces GRPC_HOST:GRPC_PORT, as the reference listens on the socket alone.
  const uds = env.GRPC_UDS?.trim() ?? '';
  if (uds !== '') set('GRPC_HOST', `unix:${uds}`, env.GRPC_HOST === undefined ? 'GRPC_UDS' : 'GRPC_UDS+GRPC_HOST');

  // The reference gives REDIS_TIMEOUT to its dialer only (0: no timeout of its own).
  if (env.REDIS_TIMEOUT !== undefined) {
    try {
      const ms = parseGoDuration(env.REDIS_TIMEOUT);
      set('REDIS_CONNECT_TIMEOUT_MS', String(ms === 0 ? 2 ** 31 - 1 : ms), 'REDIS_TIMEOUT');
    } catch (err) {
      problems.push(`REDIS_TIMEOUT: ${(err as Error).message}`);
    }
  }

  translateGrpcTls(env, set, problems);
  translateRedis(env, set, notices, problems);
  return { values, notices, problems };
}

/** GRPC_SERVER_USE_TLS=true and its files, as the reference reads them; with it off they are ignored, as there. */
function translateGrpcTls(env: Env, set: (ours: string, value: string, from: string) => void, problems: string[]): void {
  const use = env.GRPC_SERVER_USE_TLS?.trim().toLowerCase();
  if (use === undefined || /^(false|0|f|no|off|)$/.test(use)) return;
  if (!/^(true|1|t|yes|on)$/.test(use)) {
    problems.push(`GRPC_SERVER_USE_TLS: '${env.GRPC_SERVER_USE_TLS}' is not a boolean (true or false)`);
    return;
  }
  const cert = env.GRPC_SERVER_TLS_CERT?.trim() ?? '';
  const key = env.GRPC_SERVER_TLS_KEY?.trim() ?? '';
  if (cert === '' || key === '') {
    problems.push('GRPC_SERVER_USE_TLS=true needs GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY (PEM files)');
    return;
  }
  set('GRPC_TLS_CERT', cert, 'GRPC_SERVER_USE_TLS+GRPC_SERVER_TLS_CERT');
  set('GRPC_TLS_KEY', key, 'GRPC_SERVER_USE_TLS+GRPC_SERVER_TLS_KEY');
  const ca = env.GRPC_CLIENT_TLS_CACERT?.trim() ?? '';
  if (ca !== '') set('GRPC_TLS_CLIENT_CA', ca, 'GRPC_SERVER_USE_TLS+GRPC_CLIENT_TLS_CACERT');
  // The reference checks the SAN on verified client certificates only, so only with a client CA.
  const san = env.GRPC_CLIENT_TLS_SAN?.trim() ?? '';
  if (san !== '' && ca !== '') set('GRPC_TLS_CLIENT_SAN', san, 'GRPC_SERVER_USE_TLS+GRPC_CLIENT_TLS_SAN');
}

function translateRedis(env: Env, set: (ours: string, value: string, from: string) => void, notices: Notice[], problems: string[]): void {
  const socket = env.REDIS_SOCKET_TYPE?.trim().toLowerCase();
  if (socket !== undefined && socket !== 'tcp') {
    problems.push(
      socket === 'unix'
        ? `REDIS_SOCKET_TYPE=unix: unix sockets are not supported; reach Redis over TCP with REDIS_SOCKET_TYPE=tcp and REDIS_URL=host:port`
        : `REDIS_SOCKET_TYPE: '${env.REDIS_SOCKET_TYPE}' is not one of tcp, unix`,
    );
    return;
  }
  const url = env.REDIS_URL?.trim();
  const auth = env.REDIS_AUTH;
  const tls = env.REDIS_TLS === undefined ? undefined : /^(true|1|yes|on)$/i.test(env.REDIS_TLS.trim());
  // The reference's form is host:port (no scheme); anything with a scheme (`redis://`, or a malformed `redis:/`) is ours.
  const reference = url !== undefined && !/^[a-z][a-z0-9+.-]*:\//i.test(url);
  if (!reference && auth === undefined && tls === undefined) return; // our own redis:// form: nothing to translate
  const shown = url === undefined ? '' : redactUrl(url);
  const from = ['REDIS_URL', 'REDIS_AUTH', 'REDIS_TLS'].filter((n) => env[n] !== undefined).join('+');

  let base: URL;
  if (reference) {
    if (url.startsWith('/')) {
      problems.push(`REDIS_URL=${shown}: unix sockets are not supported; give host:port (with REDIS_SOCKET_TYPE=tcp)`);
      return;
    }
    const parts = url
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p !== '');
    const type = (env.REDIS_TYPE ?? 'single').trim().toLowerCase();
    let nodes = parts;
    if (type === 'sentinel') {
      if (parts.length < 2) {
        problems.push(`REDIS_URL=${shown}: with REDIS_TYPE=sentinel it is "master-name,host:port[,host:port...]"`);
        return;
      }
      nodes = parts.slice(1);
      set('REDIS_SENTINEL_MASTER', parts[0]!, 'REDIS_URL');
      set('REDIS_SENTINEL_ADDRS', nodes.join(','), 'REDIS_URL');
    } else if (type === 'cluster') {
      set('REDIS_CLUSTER_NODES', nodes.join(','), 'REDIS_URL');
    } else if (parts.length !== 1) {
      problems.push(`REDIS_URL=${shown}: a single Redis is one host:port (several are for REDIS_TYPE=sentinel or cluster)`);
      return;
    }
    const bad = nodes.find((n) => !HOST_PORT.test(n));
    if (bad !== undefined) {
      problems.push(`REDIS_URL=${shown}: '${redactUrl(bad)}' is not host:port`);
      return;
    }
    base = new URL(`redis://${nodes[0]}`);
    if (env.BACKEND === undefined && env.BACKEND_TYPE === undefined) {
      set('BACKEND', 'redis', 'REDIS_URL');
      notices.push({
        level: 'info',
        setting: 'REDIS_URL',
        message: `REDIS_URL=${shown} is the reference's host:port form and BACKEND_TYPE is unset (the reference's default is redis): counters in Redis`,
      });
    }
  } else {
    try {
      base = new URL(url ?? 'redis://127.0.0.1:6379');
    } catch {
      return; // REDIS_URL is reported by its own parser later
    }
  }

  if (auth !== undefined && auth !== '') {
    const colon = auth.indexOf(':');
    const user = colon === -1 ? '' : auth.slice(0, colon);
    const password = colon === -1 ? auth : auth.slice(colon + 1);
    const had = base.password === '' ? undefined : decodeURIComponent(base.password);
    if (had !== undefined && had !== password) {
      problems.push(`REDIS_AUTH and the password in REDIS_URL disagree: set only one of them`);
      return;
    }
    base.username = encodeURIComponent(user);
    base.password = encodeURIComponent(password);
  }
  if (tls !== undefined) {
    if (!reference && url !== undefined && (base.protocol === 'rediss:') !== tls) {
      problems.push(`REDIS_TLS=${env.REDIS_TLS} disagrees with REDIS_URL=${shown}: use rediss:// for TLS, or set only one of them`);
      return;
    }
    if (tls) base = new URL(base.href.replace(/^redis:/, 'rediss:'));
  }
  set('REDIS_URL', base.href.replace(/\/$/, ''), from);
}

/** Whether `derived` re-reads the variable `env` itself (REDIS_URL=host:port) rather than a second name. */
export function rereads(derived: Derived, env: string): boolean {
  return derived.from.split('+').includes(env);
}

/** A boolean as the reference reads it (Go's strconv.ParseBool); undefined when it is none. */
function goBool(text: string): boolean | undefined {
  const v = text.trim();
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return undefined;
}

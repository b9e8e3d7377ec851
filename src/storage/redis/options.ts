/**
 * What a Redis store needs to connect, as plain data (the composition root maps settings to it), and the
 * translation of that data into ioredis options. Pure except for reading the TLS files named in it.
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import type { ClusterOptions, RedisOptions } from 'ioredis';
import { redactUrl } from '../../vocab/redact.js';

export type RedisType = 'single' | 'sentinel' | 'cluster';

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

export interface RedisTlsOptions {
  /** PEM file of the CA(s) to trust instead of the system store. */
  readonly caFile?: string;
  /** PEM client certificate, for servers that require mutual TLS (with keyFile). */
  readonly certFile?: string;
  readonly keyFile?: string;
  /** SNI name and the name checked against the server certificate (default: the host connected to). */
  readonly servername?: string;
  /** Accept any server certificate. For tests only: it disables the protection TLS gives. */
  readonly insecureSkipVerify?: boolean;
  /** Verify the server certificate's chain but not the name it carries (REDIS_TLS_SKIP_HOSTNAME_VERIFICATION). */
  readonly skipHostnameVerification?: boolean;
}

export interface RedisConnectionOptions {
  /**
   * `redis://[[user]:password@]host[:port][/db]`; `rediss://` turns TLS on. The user and password are
   * percent-decoded (ACL user, or password only with `:password@`). Default port 6379, db 0.
   * Sentinel: the credentials and db of the master (the host is unused when `sentinels` is given).
   * Cluster: the credentials of every node and the seed node when `clusterNodes` is empty; db must be 0.
   */
  readonly url: string;
  readonly type?: RedisType;
  /** Sentinel: the master group name (`sentinel monitor <name> ...`); required with type sentinel. */
  readonly sentinelMaster?: string;
  /** Sentinel: the sentinels to ask; default the URL's host:port. */
  readonly sentinels?: readonly HostPort[];
  /** Sentinel: the password of the sentinels themselves (`requirepass` in sentinel.conf), if any. */
  readonly sentinelPassword?: string;
  /** Cluster: seed nodes (any subset of the cluster); default the URL's host:port. */
  readonly clusterNodes?: readonly HostPort[];
  /** TLS settings; only allowed with a `rediss://` URL. */
  readonly tls?: RedisTlsOptions;
  /** Give up a connection attempt after this long (default 2000 ms). */
  readonly connectTimeoutMs?: number;
  /** Fail a command that has no reply after this long (default 1000 ms); request deadlines may cut sooner. */
  readonly commandTimeoutMs?: number;
  /**
   * Reconnect back-off: 50 ms doubling, at most this (default 10 ms, so a try every 10 ms: while Redis is down
   * every answer comes from FAILURE_MODE, and the time from its return to the reconnect is time without limits;
   * a refused connect costs next to nothing).
   */
  readonly reconnectMaxDelayMs?: number;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 2000;
export const DEFAULT_COMMAND_TIMEOUT_MS = 1000;
export const DEFAULT_RECONNECT_MAX_DELAY_MS = 10;

/** Parse `host:port[,host:port...]` (IPv6 as `[::1]:6379`; port default 6379, or 26379 for sentinels). */
export function parseHostPorts(text: string, defaultPort = 6379): HostPort[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .map((item) => {
      const m = /^(?:\[([^\]]+)\]|([^:]+))(?::(\d+))?$/.exec(item);
      const host = m?.[1] ?? m?.[2];
      const port = m?.[3] === undefined ? defaultPort : Number(m[3]);
      if (!host || !Number.isInteger(port) || port < 1 || port > 65535) {
        throw new Error(`'${item}' is not host:port`);
      }
      return { host, port };
    });
}

interface ParsedUrl {
  readonly host: string;
  readonly port: number;
  readonly username?: string;
  readonly password?: string;
  readonly db: number;
  readonly tls: boolean;
}

export function parseRedisUrl(url: string): ParsedUrl {
  // Never echo `url` itself: it may hold a password.
  const shown = redactUrl(url);
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`Redis URL '${shown}' is not a URL (expected redis://host:port or rediss://...)`);
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') {
    throw new Error(`Redis URL '${shown}' must start with redis:// or rediss://`);
  }
  const path = u.pathname.replace(/^\//, '');
  const db = path === '' ? 0 : Number(path);
  if (!Number.isInteger(db) || db < 0) throw new Error(`Redis URL '${shown}': '/${redactUrl(path)}' is not a database number`);
  const username = u.username === '' ? undefined : decodeURIComponent(u.username);
  const password = u.password === '' ? undefined : decodeURIComponent(u.password);
  return {
    host: u.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1',
    port: u.port === '' ? 6379 : Number(u.port),
    ...(username === undefined ? {} : { username }),
    ...(password === undefined ? {} : { password }),
    db,
    tls: u.protocol === 'rediss:',
  };
}

function tlsOptions(parsed: ParsedUrl, tls: RedisTlsOptions | undefined): ConnectionOptions | undefined {
  // Skipping the name check asks for nothing by itself: without TLS it changes nothing (as in envoyproxy/ratelimit).
  const given = tls !== undefined && Object.entries(tls).some(([k, v]) => k !== 'skipHostnameVerification' && v !== undefined && v !== false);
  if (!parsed.tls) {
    if (given) throw new Error('Redis TLS options are set but the URL is not rediss://');
    return undefined;
  }
  const out: ConnectionOptions = {};
  if (tls?.caFile) out.ca = readFileSync(tls.caFile);
  if (tls?.certFile) out.cert = readFileSync(tls.certFile);
  if (tls?.keyFile) out.key = readFileSync(tls.keyFile);
  if (tls?.servername) out.servername = tls.servername;
  if (tls?.insecureSkipVerify) out.rejectUnauthorized = false;
  if (tls?.skipHostnameVerification) out.checkServerIdentity = () => undefined;
  return out;
}

/** Capped exponential back-off: 50, 100, 200 ... ms up to `cap`; never gives up. */
export function backoff(cap: number): (times: number) => number {
  return (times) => Math.min(50 * 2 ** Math.min(Math.max(times - 1, 0), 16), cap);
}

/** Options shared by every connection: fail fast while down, reconnect forever, pipeline automatically. */
function commonOptions(o: RedisConnectionOptions, parsed: ParsedUrl): RedisOptions {
  const tls = tlsOptions(parsed, o.tls);
  return {
    ...(parsed.username === undefined ? {} : { username: parsed.username }),
    ...(parsed.password === undefined ? {} : { password: parsed.password }),
    ...(tls === undefined ? {} : { tls }),
    connectTimeout: o.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    commandTimeout: o.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
    // A down Redis must fail the request now (the failure mode answers), not queue it for later.
    enableOfflineQueue: false,
    // A command whose connection dropped is failed, never resent: the script may already have counted it.
    maxRetriesPerRequest: 0,
    enableAutoPipelining: true,
    // After a failover the old master turns replica: reconnect (to the new master) without resending.
    reconnectOnError: (error) => (error.message.startsWith('READONLY') ? 1 : false),
  };
}

export type ClientPlan =
  | { readonly type: 'single' | 'sentinel'; readonly options: RedisOptions }
  | { readonly type: 'cluster'; readonly nodes: HostPort[]; readonly options: ClusterOptions };

/** Translate the options into what ioredis's Redis or Cluster constructor takes; throws on bad options. */
export function planClient(o: RedisConnectionOptions): ClientPlan {
  const parsed = parseRedisUrl(o.url);
  const common = commonOptions(o, parsed);
  const retry = backoff(o.reconnectMaxDelayMs ?? DEFAULT_RECONNECT_MAX_DELAY_MS);
  const type = o.type ?? 'single';
  if (type === 'single') {
    return { type, options: { ...common, host: parsed.host, port: parsed.port, db: parsed.db, retryStrategy: retry } };
  }
  if (type === 'sentinel') {
    if (!o.sentinelMaster) throw new Error('Redis type sentinel needs the master name (sentinelMaster)');
    const sentinels = o.sentinels && o.sentinels.length > 0 ? o.sentinels : [{ host: parsed.host, port: parsed.port }];
    return {
      type,
      options: {
        ...common,
        name: o.sentinelMaster,
        sentinels: sentinels.map((s) => ({ host: s.host, port: s.port })),
        ...(o.sentinelPassword === undefined ? {} : { sentinelPassword: o.sentinelPassword }),
        ...(common.tls === undefined ? {} : { enableTLSForSentinelMode: true, sentinelTLS: common.tls }),
        db: parsed.db,
        retryStrategy: retry,
        sentinelRetryStrategy: retry,
      },
    };
  }
  if (parsed.db !== 0) throw new Error('Redis Cluster has only database 0; remove the /db from the URL');
  const nodes = o.clusterNodes && o.clusterNodes.length > 0 ? [...o.clusterNodes] : [{ host: parsed.host, port: parsed.port }];
  const { enableOfflineQueue: _q, enableAutoPipelining: _p, ...redisOptions } = common;
  return {
    type,
    nodes,
    options: {
      redisOptions,
      enableOfflineQueue: false,
      enableAutoPipelining: true,
      enableReadyCheck: true,
      clusterRetryStrategy: retry,
      // With TLS the certificates name hosts, not the IPs the cluster announces: keep the names as given.
      ...(common.tls === undefined ? {} : { dnsLookup: (address: string, done: (e: null, a: string) => void) => done(null, address) }),
      slotsRefreshTimeout: o.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    },
  };
}

/**
 * A memcached client over a list of servers, each key on one server picked as envoyproxy/ratelimit's client
 * (gomemcache's ServerList) picks it: CRC-32 (IEEE) of the key modulo the number of servers, in list order
 * (MEMCACHE_HOST_PORT as given; SRV targets sorted). Both services given the same list therefore read and write
 * every counter on the same server.
 *
 * Each server has up to `connectionsPerServer` pipelined connections (MEMCACHE_MAX_IDLE_CONNS), used in turn,
 * opened when first needed. A server whose connection failed is not dialled again for `retryMs`: commands for
 * it fail at once meanwhile, so that a dead server costs no connect timeout per request.
 */
import { isIP } from 'node:net';
import { crc32 } from 'node:zlib';
import type { ConnectionOptions } from 'node:tls';
import { MemcachedConnection, type Reply } from './text-connection.js';

export interface MemcachedClientOptions {
  /** host:port of each server, in the order that picks a key's server. */
  readonly servers: readonly string[];
  readonly connectionsPerServer: number;
  readonly tls?: ConnectionOptions;
  readonly connectTimeoutMs: number;
  readonly replyTimeoutMs: number;
  /** Wait before dialling a failed server again (default 100 ms). */
  readonly retryMs?: number;
  /** Told every connection failure (throttled by the caller). */
  readonly onError?: (message: string) => void;
}

interface Server {
  readonly host: string;
  readonly port: number;
  readonly label: string;
  readonly connections: (MemcachedConnection | undefined)[];
  next: number;
  /** Epoch ms before which it is not dialled again, and why. */
  downUntil: number;
  lastError: string | undefined;
}

const MAX_PENDING = 10_000;

export function parseServer(text: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:\s]+)):(\d{1,5})$/.exec(text.trim());
  const port = m === null ? NaN : Number(m[3]);
  if (m === null || port < 1 || port > 65_535) throw new Error(`'${text}' is not host:port`);
  return { host: m[1] ?? m[2]!, port };
}

export class MemcachedClient {
  private servers: Server[] = [];
  private closed = false;

  constructor(private readonly options: MemcachedClientOptions) {
    this.setServers(options.servers);
  }

  /** Replaces the server list (SRV refresh); connections to servers still listed are kept. */
  setServers(list: readonly string[]): void {
    const old = new Map(this.servers.map((s) => [s.label, s]));
    this.servers = list.map((label) => {
      const kept = old.get(label);
      if (kept !== undefined) {
        old.delete(label);
        return kept;
      }
      const { host, port } = parseServer(label);
      return {
        host,
        port,
        label,
        connections: new Array(Math.max(1, this.options.connectionsPerServer)).fill(undefined),
        next: 0,
        downUntil: 0,
        lastError: undefined,
      };
    });
    for (const gone of old.values()) for (const c of gone.connections) c?.close();
  }

  get serverList(): readonly string[] {
    return this.servers.map((s) => s.label);
  }

  /** Some listed server is worth asking: connected, or not failed within the last `retryMs`. */
  get reachable(): boolean {
    const now = Date.now();
    return this.servers.some((s) => s.connections.some((c) => c?.isConnected === true) || now >= s.downUntil);
  }

  /** The last failure of a server that is not connected, if any. */
  get problem(): string | undefined {
    if (this.servers.length === 0) return 'no memcached servers';
    return this.servers.find((s) => !s.connections.some((c) => c?.isConnected === true) && s.lastError !== undefined)?.lastError;
  }

  private serverFor(key: string): Server {
    const n = this.servers.length;
    if (n === 0) throw new Error('no memcached servers');
    return n === 1 ? this.servers[0]! : this.servers[crc32(key) % n]!;
  }

  private send(server: Server, command: string, multi: boolean): Promise<Reply> {
    if (this.closed) return Promise.reject(new Error('memcached client closed'));
    const at = server.next;
    server.next = (at + 1) % server.connections.length;
    let connection = server.connections[at];
    if (connection === undefined || !connection.isOpen) {
      if (Date.now() < server.downUntil) return Promise.reject(new Error(server.lastError ?? `memcached ${server.label} is down`));
      connection = new MemcachedConnection(
        {
          host: server.host,
          port: server.port,
          ...(this.options.tls !== undefined ? { tls: isIP(server.host) === 0 ? { servername: server.host, ...this.options.tls } : this.options.tls } : {}),
          connectTimeoutMs: this.options.connectTimeoutMs,
          replyTimeoutMs: this.options.replyTimeoutMs,
          maxPending: MAX_PENDING,
        },
        (closed, error) => {
          if (server.connections[at] === closed) server.connections[at] = undefined;
          if (this.closed) return;
          // A server whose connection failed (refused, reset, stalled) is likely down: not dialled again for retryMs.
          server.lastError = error.message;
          server.downUntil = Date.now() + (this.options.retryMs ?? 100);
          this.options.onError?.(error.message);
        },
      );
      server.connections[at] = connection;
    }
    return connection.send(command, multi);
  }

  /** Values of the keys found (missing keys are absent), one `get` per server holding some of them. */
  async getMulti(keys: readonly string[]): Promise<Map<string, string>> {
    const byServer = new Map<Server, string[]>();
    for (const key of keys) {
      const server = this.serverFor(key);
      const list = byServer.get(server);
      if (list === undefined) byServer.set(server, [key]);
      else list.push(key);
    }
    const replies = await Promise.all([...byServer].map(([server, list]) => this.send(server, `get ${list.join(' ')}\r\n`, true)));
    if (replies.length === 1) return replies[0] as Map<string, string>;
    const out = new Map<string, string>();
    for (const r of replies) for (const [k, v] of r as Map<string, string>) out.set(k, v);
    return out;
  }

  /** The value after adding `by`, or undefined when the key does not exist. */
  incr(key: string, by: number): Promise<number | undefined> {
    return this.counter('incr', key, by);
  }

  /** The value after taking `by` (never below 0), or undefined when the key does not exist. */
  decr(key: string, by: number): Promise<number | undefined> {
    return this.counter('decr', key, by);
  }

  private async counter(op: 'incr' | 'decr', key: string, by: number): Promise<number | undefined> {
    const line = (await this.send(this.serverFor(key), `${op} ${key} ${by}\r\n`, false)) as string;
    if (line === 'NOT_FOUND') return undefined;
    if (/^\d+$/.test(line)) return Number(line);
    throw new Error(`memcached ${op} ${key}: ${line}`);
  }

  /** Stores `value` under `key` unless it exists; true when stored. `exptime`: seconds (≤ 30 days) or a Unix time. */
  async add(key: string, value: string, exptime: number): Promise<boolean> {
    const line = (await this.send(this.serverFor(key), `add ${key} 0 ${exptime} ${Buffer.byteLength(value)}\r\n${value}\r\n`, false)) as string;
    if (line === 'STORED') return true;
    if (line === 'NOT_STORED') return false;
    throw new Error(`memcached add ${key}: ${line}`);
  }

  /** Asks every server its version: resolves when all answer. */
  async ping(): Promise<void> {
    if (this.servers.length === 0) throw new Error('no memcached servers');
    await Promise.all(
      this.servers.map(async (s) => {
        const line = await this.send(s, 'version\r\n', false);
        if (typeof line !== 'string' || !line.startsWith('VERSION')) throw new Error(`memcached ${s.label} did not answer 'version' with its version`);
      }),
    );
  }

  close(): void {
    this.closed = true;
    for (const s of this.servers) for (const c of s.connections) c?.close();
  }
}

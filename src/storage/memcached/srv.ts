/**
 * MEMCACHE_SRV: the memcached servers from a DNS SRV record `_service._proto.name`, as envoyproxy/ratelimit
 * reads it: every target's host:port, sorted (its client picks a key's server by position in the list, so both
 * services must list the servers in the same order), refreshed every MEMCACHE_SRV_REFRESH when that is > 0.
 */
import { promises as dns, type SrvRecord } from 'node:dns';

/** Resolves an SRV name (node:dns resolveSrv by default; tests may give a resolver of their own). */
export type SrvResolver = (name: string) => Promise<SrvRecord[]>;

const SRV_NAME = /^_(.+?)\._(.+?)\.(.+)$/;

/** Throws when `srv` is not `_service._proto.name`. */
export function checkSrvName(srv: string): void {
  if (!SRV_NAME.test(srv)) throw new Error(`MEMCACHE_SRV '${srv}' is not an SRV name such as _memcache._tcp.memcached.example.svc`);
}

/**
 * The servers of the record, as host:port, sorted as the reference sorts them: by the fully qualified form
 * (`host.:port`, the trailing dot its resolver keeps), so that both pick the same server for every key.
 */
export async function serversFromSrv(srv: string, resolve: SrvResolver = (name) => dns.resolveSrv(name)): Promise<string[]> {
  checkSrvName(srv);
  const records = await resolve(srv);
  if (records.length === 0) throw new Error(`MEMCACHE_SRV ${srv} has no targets`);
  const fq = records.map((r) => {
    const host = r.name.endsWith('.') ? r.name.slice(0, -1) : r.name;
    return { sortKey: `${host}.:${r.port}`, server: `${host.includes(':') ? `[${host}]` : host}:${r.port}` };
  });
  fq.sort((a, b) => (a.sortKey < b.sortKey ? -1 : a.sortKey > b.sortKey ? 1 : 0));
  return fq.map((x) => x.server);
}

/**
 * Re-reads the record every `everyMs` and hands a changed list to `apply`; a failed lookup keeps the servers
 * in use (and is reported). The timer does not keep the process alive. Returns the stop function.
 */
export function refreshSrv(
  srv: string,
  everyMs: number,
  apply: (servers: string[]) => void,
  options: { resolve?: SrvResolver; onError?: (message: string) => void; current: () => readonly string[] },
): () => void {
  let stopped = false;
  const timer = setInterval(() => {
    serversFromSrv(srv, options.resolve).then(
      (servers) => {
        if (!stopped && servers.join(',') !== options.current().join(',')) apply(servers);
      },
      (error: unknown) => options.onError?.(`MEMCACHE_SRV ${srv}: refresh failed, keeping ${options.current().join(', ')}: ${(error as Error).message}`),
    );
  }, everyMs);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

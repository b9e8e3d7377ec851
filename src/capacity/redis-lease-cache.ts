/**
 * One replica's copy of a resource's leases on Redis (BACKEND=redis), kept up to date incrementally: Redis holds
 * the leases, a version (the number of changes ever written) and a bounded log of the last changes
 * (lua/capacity/sync.lua, commit.lua). Before a decision the replica asks for the changes since the version its
 * copy is at and applies them to its LeaseStore and bands (the memory store's structures, so the decision is
 * the memory store's O(log n) one); it receives the whole hash only when its copy is of a lost state (another
 * marker), too far behind, or the log no longer reaches back. Its commit names the marker and version it decided
 * on and is refused if anyone wrote since; on success the copy plus its own change IS the state at the new
 * version, so a replica that wrote last synchronises for O(1).
 *
 * Expired leases are dropped from the copy by the replica's clock (LeaseStore.clean, as the memory store), and
 * from Redis by commit.lua (a sorted set of expiries, at most 64 per commit), which logs them: applying the drop
 * of a lease the copy already dropped is a no-op.
 */
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { capacityKeys } from '../core/keys.js';
import { BatchCommands, type BatchScript } from '../storage/redis/batch-script.js';
import type { RedisClient } from '../storage/redis/connection.js';
import type { Resource } from './capacity-server.js';
import { LeaseStore, type StoredLease } from './lease-store.js';
import { PriorityBands } from './priority-bands.js';

const LUA_DIR = new URL('../storage/redis/lua/capacity/', import.meta.url);
/** Changes the log keeps per resource (about 60 bytes each): a replica further behind reads the whole hash. */
export const DEFAULT_LOG_LENGTH = 512;

function script(name: string): BatchScript {
  return { lua: readFileSync(new URL(name, LUA_DIR), 'utf8'), algorithms: [] };
}

/** "has wants subclients priority expiryMs refreshInterval": numbers as JavaScript prints them (exact for doubles). */
export function packLease(l: StoredLease): string {
  return `${l.has} ${l.wants} ${l.subclients} ${l.priority} ${l.expiryMs} ${l.refreshInterval}`;
}

export function unpackLease(text: string): StoredLease | undefined {
  const p = text.split(' ').map(Number);
  if (p.length !== 6 || !p.every(Number.isFinite)) return undefined;
  return { has: p[0]!, wants: p[1]!, subclients: p[2]!, priority: p[3]!, expiryMs: p[4]!, refreshInterval: p[5]! };
}

/** Where a resource's copy stands: the state (marker) and version it is of. */
interface CopyOf {
  marker: string;
  version: string;
}

export interface LeaseCacheStats {
  /** Synchronisations that read the whole lease hash (first use, a flush, a lost or outrun log). */
  fullReads: number;
  /** Synchronisations answered with changes only. */
  deltaReads: number;
  /** Changes applied from the log (other replicas' decisions, releases, expiries). */
  changesApplied: number;
}

export class RedisLeaseCache {
  private readonly sync: BatchCommands;
  private readonly commitScript: BatchCommands;
  private readonly copies = new Map<string, CopyOf>();
  readonly stats: LeaseCacheStats = { fullReads: 0, deltaReads: 0, changesApplied: 0 };

  constructor(
    client: RedisClient,
    private readonly prefix: string,
    private readonly logLength = DEFAULT_LOG_LENGTH,
  ) {
    this.sync = new BatchCommands(client, script('sync.lua'));
    this.commitScript = new BatchCommands(client, script('commit.lua'));
  }

  /** Brings `res`'s store and bands up to the state in Redis at `now`; throws on a Redis error (the copy unchanged). */
  async refresh(res: Resource, now: number): Promise<void> {
    const k = capacityKeys(this.prefix, res.id);
    const copy = this.copies.get(res.id);
    const fresh = `${now} ${randomBytes(6).toString('base64url')}`;
    const reply = await this.sync.call(4, [k.leases, k.version, k.since, k.log, fresh, copy?.marker ?? '', copy?.version ?? '-1', this.logLength]);
    if (!Array.isArray(reply) || reply.length < 3) throw new Error(`unexpected capacity sync reply for ${res.id}`);
    const items = reply.map(String);
    const [marker, version, kind] = items as [string, string, string];
    if (kind === 'f') {
      const store = new LeaseStore();
      const bands = new PriorityBands();
      for (let i = 3; i + 1 < items.length; i += 2) {
        const lease = unpackLease(items[i + 1]!);
        // Unreadable and expired entries are left out (they cannot be honoured; commit.lua drops them in time).
        if (lease === undefined || lease.expiryMs < now) continue;
        store.assign(items[i]!, lease);
        bands.assign(items[i]!, undefined, lease);
      }
      res.store = store;
      res.bands = bands;
      this.stats.fullReads++;
    } else {
      for (let i = 3; i < items.length; i++) this.apply(res, items[i]!);
      this.stats.deltaReads++;
      this.stats.changesApplied += items.length - 3;
      res.store.clean(now);
      res.bands.clean(now);
    }
    res.stateSinceMs = Number(marker.split(' ')[0]);
    this.copies.set(res.id, { marker, version });
  }

  /**
   * Writes `client`'s lease (undefined: drops it) if the state is still the one the copy is of; on success the
   * copy takes the change and the new version. Returns false on a conflict (nothing written). `force` writes
   * whatever the state (a release: dropping a lease never over-grants); the copy then synchronises next time.
   */
  async commit(res: Resource, client: string, lease: StoredLease | undefined, now: number, force = false): Promise<boolean> {
    const copy = this.copies.get(res.id);
    if (copy === undefined && !force) return false;
    const k = capacityKeys(this.prefix, res.id);
    const args = [k.leases, k.version, k.since, k.log, k.expiries, force ? '' : copy!.marker, copy?.version ?? '', client, lease === undefined ? '' : packLease(lease), lease?.expiryMs ?? 0, now, this.logLength];
    const written = Number(await this.commitScript.call(5, args));
    if (force) {
      this.copies.delete(res.id);
      return true;
    }
    if (!(written > 0)) return false;
    if (lease === undefined) forget(res, client);
    else {
      const old = res.store.get(client);
      res.store.assign(client, lease);
      res.bands.assign(client, old, lease);
    }
    this.copies.set(res.id, { marker: copy!.marker, version: String(written) });
    return true;
  }

  /** One logged change: "<packed lease>\n<client>" or "-\n<client>". */
  private apply(res: Resource, change: string): void {
    const at = change.indexOf('\n');
    const client = change.slice(at + 1);
    const lease = change.startsWith('-\n') ? undefined : unpackLease(change.slice(0, at));
    if (lease === undefined) forget(res, client);
    else {
      const old = res.store.get(client);
      res.store.assign(client, lease);
      res.bands.assign(client, old, lease);
    }
  }
}

function forget(res: Resource, client: string): void {
  const lease = res.store.get(client);
  if (lease === undefined) return;
  res.store.release(client);
  res.bands.release(client, lease.priority);
}

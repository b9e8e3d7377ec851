/**
 * One replica's copy of a resource's leases on Redis (BACKEND=redis), kept up to date incrementally: Redis holds
 * the leases, a version (the number of changes ever written) and a bounded log of the last changes
 * (lua/capacity/exchange.lua). The replica decides on its copy (the memory store's LeaseStore and bands, so the
 * decision is the memory store's O(log n) one) and sends its writes with the marker and version the copy is
 * of: if nobody wrote since, they are written and the copy, which holds them already, IS the state at the new
 * version (one round trip, nothing read back); if someone did, nothing is written, the replica takes back its
 * tentative writes and applies the changes since its version that come back instead (the whole hash only when
 * its copy is of a lost state, too far behind, or the log no longer reaches back), and decides again.
 *
 * Expired leases are dropped from the copy by the replica's clock (LeaseStore.clean, as the memory store), and
 * from Redis by the script (a sorted set of expiries, at most 64 per write), which logs them: applying the drop
 * of a lease the copy already dropped is a no-op.
 */
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { capacityKeys } from '../vocab/keys.js';
import { BatchCommands, type BatchScript } from '../storage/redis/batch-script.js';
import type { RedisClient } from '../storage/redis/connection.js';
import { syncBands, type Resource } from './capacity-server.js';
import { fromRedisId, redisId } from './ids.js';
import { LeaseStore, type StoredLease } from './resource-leases.js';

const LUA_DIR = new URL('../storage/redis/lua/capacity/', import.meta.url);
/** Changes the log keeps per resource (about 60 bytes each): a replica further behind reads the whole hash. */
export const DEFAULT_LOG_LENGTH = 512;
/**
 * How long a resource's marker and version outlive its last lease (ms). While they stand, the resource's next use
 * continues its state (no learning mode); after, it starts afresh, as at first use.
 */
export const MARKER_GRACE_MS = 3_600_000;

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
  /** Round trips to Redis (exchange.lua calls). */
  exchanges: number;
  /** Synchronisations that read the whole lease hash (first use, a flush, a lost or outrun log). */
  fullReads: number;
  /** Synchronisations answered with changes only. */
  deltaReads: number;
  /** Changes applied from the log (other replicas' decisions, releases, expiries). */
  changesApplied: number;
}

/**
 * What a batch changed on the copy: each client it touched, with the lease the client held before (undefined:
 * none). The writes are the copy's leases of these clients now (a drop where it holds none), so a client asked
 * for several times in one batch is written once; taking the batch back puts the old leases back.
 */
export type Changed = Map<string, StoredLease | undefined>;

export class RedisLeaseCache {
  private readonly script: BatchCommands;
  private readonly copies = new Map<string, CopyOf>();
  readonly stats: LeaseCacheStats = { exchanges: 0, fullReads: 0, deltaReads: 0, changesApplied: 0 };
  /** Makes each marker this replica proposes its own: a random prefix and a count (no randomness per call). */
  private readonly nonce = randomBytes(6).toString('base64url');
  private proposals = 0;

  constructor(
    client: RedisClient,
    private readonly prefix: string,
    private readonly logLength = DEFAULT_LOG_LENGTH,
  ) {
    this.script = new BatchCommands(client, script('exchange.lua'));
  }

  /** Forgets the copy of a resource (dropped: no lease left); its next use reads it again. */
  forget(id: string): void {
    this.copies.delete(id);
  }

  /** Whether this replica holds a copy of the resource (else its first exchange is a read). */
  has(id: string): boolean {
    return this.copies.has(id);
  }

  /** Brings `res`'s store and bands up to the state in Redis at `now`; throws on a Redis error (the copy unchanged). */
  async refresh(res: Resource, now: number): Promise<void> {
    await this.exchange(res, now, new Map(), false);
  }

  /**
   * Writes what `changed` names, already applied to the copy, if the state is still the one the copy is of:
   * true, the copy is now at the new version. Else the changes are taken back out of the copy, the copy catches
   * up, and false: decide again. `force` writes whatever the state (releases: dropping a lease never
   * over-grants); the copy is then forgotten (others may have written) and read again next time. On a Redis
   * error the changes are taken back too: whether or not they reached Redis, the log brings them next time.
   */
  async exchange(res: Resource, now: number, changed: Changed, force: boolean): Promise<boolean> {
    const k = capacityKeys(this.prefix, redisId(res.id));
    const copy = this.copies.get(res.id);
    const marker = `${now} ${this.nonce}${(this.proposals++).toString(36)}`;
    const args = [
      k.leases,
      k.version,
      k.since,
      k.log,
      k.expiries,
      marker,
      copy?.marker ?? '',
      copy?.version ?? '-1',
      this.logLength,
      now,
      force ? '1' : '0',
      writeFrame(res, changed),
      MARKER_GRACE_MS,
    ];
    let items: string[];
    this.stats.exchanges++;
    try {
      const reply = await this.script.callDirect(5, args);
      if (!Array.isArray(reply) || reply.length < 2) throw new Error(`unexpected capacity exchange reply for ${res.id}`);
      items = reply as string[];
    } catch (error) {
      takeBack(res, changed);
      throw error;
    }
    if (items[0] === 'w') {
      if (force || copy === undefined) this.copies.delete(res.id);
      else {
        // A copy of "no state" (marker '') that wrote first began the state with the marker it proposed.
        const written = items[2] ?? copy.marker;
        if (written !== copy.marker && written !== '') res.stateSinceMs = Number(written.split(' ')[0]);
        this.copies.set(res.id, { marker: written, version: items[1]! });
      }
      return true;
    }
    takeBack(res, changed);
    this.apply(res, items, now);
    return false;
  }

  /**
   * A synchronisation reply: { marker, version, 'd', change... } or { marker, version, 'f', client, lease, ... };
   * marker '' when Redis holds no state of the resource (none yet, or dropped: its next write begins it).
   */
  private apply(res: Resource, items: string[], now: number): void {
    const [marker, version, kind] = items as [string, string, string];
    if (kind === 'f') {
      const store = new LeaseStore();
      for (let i = 3; i + 1 < items.length; i += 2) {
        const lease = unpackLease(items[i + 1]!);
        // Unreadable and expired entries are left out (they cannot be honoured; the script drops them in time).
        if (lease === undefined || lease.expiryMs < now) continue;
        store.assign(fromRedisId(items[i]!), lease);
      }
      res.store = store;
      res.bands = undefined;
      syncBands(res);
      this.stats.fullReads++;
    } else {
      for (let i = 3; i < items.length; i++) this.applyChange(res, items[i]!);
      this.stats.deltaReads++;
      this.stats.changesApplied += items.length - 3;
      res.store.clean(now);
      res.bands?.clean(now);
    }
    // No state in Redis: it begins with this replica's next write, now (learning mode counts from it).
    res.stateSinceMs = marker === '' ? now : Number(marker.split(' ')[0]);
    this.copies.set(res.id, { marker, version });
  }

  /** One logged change: "<packed lease>\n<client>" or "-\n<client>". */
  private applyChange(res: Resource, change: string): void {
    const at = change.indexOf('\n');
    const lease = change.startsWith('-\n') ? undefined : unpackLease(change.slice(0, at));
    setLease(res, fromRedisId(change.slice(at + 1)), lease);
  }
}

/** Puts the leases `changed` names back as they were before the batch. */
export function takeBack(res: Resource, changed: Changed): void {
  for (const [client, old] of changed) setLease(res, client, old);
}

/**
 * The writes as one binary argument, each (struct format '<Hc0Hc0d') the client's length and bytes as Redis
 * keeps them (ids.ts redisId), the
 * packed lease's length (0: drop) and text, and the expiry in ms as a double: one argument however many
 * writes, so neither the client library nor Redis handles three per write.
 */
function writeFrame(res: Resource, changed: Changed): Buffer {
  const leases: (string | undefined)[] = [];
  let size = 0;
  for (const client of changed.keys()) {
    const lease = res.store.get(client);
    const packed = lease === undefined ? undefined : packLease(lease);
    leases.push(packed);
    size += 14 + 3 * client.length + (packed?.length ?? 0);
  }
  const frame = Buffer.allocUnsafe(size);
  let at = 0;
  let i = 0;
  for (const client of changed.keys()) {
    const packed = leases[i++];
    const n = frame.write(redisId(client), at + 2, 'utf8');
    frame.writeUInt16LE(n, at);
    at += 2 + n;
    const m = packed === undefined ? 0 : frame.write(packed, at + 2, 'latin1');
    frame.writeUInt16LE(m, at);
    at += 2 + m;
    frame.writeDoubleLE(res.store.get(client)?.expiryMs ?? 0, at);
    at += 8;
  }
  return frame.subarray(0, at);
}

/** Puts a lease into a copy (store and bands), or takes the client's out (undefined). */
export function setLease(res: Resource, client: string, lease: StoredLease | undefined): void {
  const old = res.store.get(client);
  if (lease !== undefined) {
    res.store.assign(client, lease);
    res.bands?.assign(client, old, lease);
  } else if (old !== undefined) {
    res.store.release(client);
    res.bands?.release(client, old.priority);
  }
}

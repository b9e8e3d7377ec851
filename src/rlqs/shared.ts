/**
 * Quota shares across replicas (BACKEND=redis): every replica keeps, per bucket, one Redis hash of the Envoys
 * holding it on any replica (field: replica and stream id; value: the share it was last given, its measured
 * demand, and when the entry expires). On each report message a replica reads the hashes of the reported
 * buckets (one HGETALL per bucket, auto-pipelined on the store's own connection), shares out the limit over
 * its own Envoys and everyone else's, and writes its own Envoys' entries back.
 *
 * An entry lives ENTRY_TTL_MS past its last write (an Envoy reports every 5 s), and so does the hash: the
 * entries of a replica that died vanish by themselves; expired fields are deleted when read. When Redis does
 * not answer within READ_TIMEOUT_MS the report is answered from the last view of the other replicas (never
 * an error: an error would be a bypass), and writes are dropped (logged, throttled).
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { RedisClient } from '../storage/redis/connection.js';

/** Another replica's Envoy holding a bucket: its current share and measured demand (undefined: not yet). */
export interface PeerHolder {
  readonly share: number;
  readonly demand: number | undefined;
  /** Its client address (streams from one address are one client in the split), when known. */
  readonly client?: string;
}

/** One of this replica's Envoys holding a bucket, as written to the store. */
export interface OwnHolder {
  readonly bucket: string;
  readonly stream: string;
  readonly share: number;
  readonly demand: number | undefined;
}

export interface ShareExchange {
  /** The other replicas' holders of each bucket (by book key); rejects when the store does not answer in time. */
  read(buckets: readonly string[]): Promise<Map<string, PeerHolder[]>>;
  /** This replica's holders, written best effort, to expire in `ttlMs` (default ENTRY_TTL_MS). */
  write(holders: readonly OwnHolder[], ttlMs?: number): void;
  /** A stream released a bucket: its entry is deleted, best effort. */
  remove(bucket: string, stream: string): void;
  /** Asks every replica to read the bucket again (its Envoys here want what others hold), best effort. */
  signal(bucket: string): void;
  /** The buckets signalled since the last call (by any replica); rejects when the store does not answer. */
  signalled(): Promise<string[]>;
}

/** How long an entry outlives its last write: three of Envoy's 5 s reports. */
export const ENTRY_TTL_MS = 15_000;
/**
 * How long the entries of an Envoy whose stream ended still count: it enforces its last shares until it is
 * assigned again, and it reconnects on its 5 s tick. Counted longer, its new entry and the old one would both
 * hold a share; shorter, the others would grow while it still enforces its old one.
 */
export const RECONNECT_GRACE_MS = 6000;
/** Signals kept in the stream (`<prefix>rlqs:signals`), and read per call, at most. */
export const MAX_SIGNALS = 1000;
/** How long a report waits for the other replicas' holders before it is answered from the last view. */
export const READ_TIMEOUT_MS = 500;

export interface RedisExchangeOptions {
  readonly client: RedisClient;
  /** Key prefix (CACHE_KEY_PREFIX); a bucket's hash is `<prefix>rlqs:<bucket key>`. */
  readonly keyPrefix: string;
  readonly replicaId?: string;
  readonly nowMs?: () => number;
  readonly readTimeoutMs?: number;
  readonly log?: (message: string, error: unknown) => void;
}

export function redisShareExchange(o: RedisExchangeOptions): ShareExchange {
  const replica = o.replicaId ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const mine = `${replica}|`;
  const now = o.nowMs ?? Date.now;
  const timeoutMs = o.readTimeoutMs ?? READ_TIMEOUT_MS;
  const keyOf = (bucket: string) => `${o.keyPrefix}rlqs:${bucket}`;
  const signals = `${o.keyPrefix}rlqs:signals`;
  let lastSignal: string | undefined;
  const failed = (error: unknown) => o.log?.("quota shares: Redis did not answer; the other replicas' last known shares are used", error);

  const readOne = async (bucket: string, at: number): Promise<PeerHolder[]> => {
    const key = keyOf(bucket);
    const fields = await o.client.hgetall(key);
    const peers: PeerHolder[] = [];
    const expired: string[] = [];
    for (const [field, value] of Object.entries(fields)) {
      if (field.startsWith(mine)) continue;
      const entry = parseEntry(value);
      if (entry === undefined || entry.expiresAtMs <= at) expired.push(field);
      else peers.push({ share: entry.share, demand: entry.demand, client: clientOf(field) });
    }
    if (expired.length > 0) o.client.hdel(key, ...expired).catch(failed);
    return peers;
  };

  return {
    async read(buckets) {
      const at = now();
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      });
      try {
        const lists = await Promise.race([Promise.all(buckets.map((b) => readOne(b, at))), timeout]);
        return new Map(buckets.map((b, i) => [b, lists[i]!]));
      } catch (error) {
        failed(error);
        throw error;
      } finally {
        clearTimeout(timer);
      }
    },
    write(holders, ttlMs = ENTRY_TTL_MS) {
      const expiresAtMs = Math.round(now() + ttlMs);
      const byBucket = new Map<string, Record<string, string>>();
      for (const h of holders) {
        let fields = byBucket.get(h.bucket);
        if (fields === undefined) byBucket.set(h.bucket, (fields = {}));
        fields[mine + h.stream] = `${h.share}:${h.demand === undefined ? '' : h.demand.toFixed(2)}:${expiresAtMs}`;
      }
      for (const [bucket, fields] of byBucket) {
        const key = keyOf(bucket);
        o.client
          .hset(key, fields)
          .then(() => o.client.pexpire(key, ENTRY_TTL_MS))
          .catch(failed);
      }
    },
    remove(bucket, stream) {
      o.client.hdel(keyOf(bucket), mine + stream).catch(failed);
    },
    signal(bucket) {
      o.client
        .xadd(signals, 'MAXLEN', '~', String(MAX_SIGNALS), '*', 'b', bucket)
        .then(() => o.client.pexpire(signals, ENTRY_TTL_MS))
        .catch(failed);
    },
    async signalled() {
      if (lastSignal === undefined) {
        // The first call starts from the newest signal: older ones were answered by the reports since.
        const newest = await o.client.xrevrange(signals, '+', '-', 'COUNT', 1);
        lastSignal = newest[0]?.[0] ?? '0-0';
        return [];
      }
      const read = await o.client.xread('COUNT', MAX_SIGNALS, 'STREAMS', signals, lastSignal);
      const entries = read?.[0]?.[1] ?? [];
      const out = new Set<string>();
      for (const [id, fields] of entries) {
        lastSignal = id;
        if (fields[0] === 'b' && fields[1] !== undefined) out.add(fields[1]);
      }
      return [...out];
    },
  };
}

/**
 * The client address of a stream id `<n>@<address>:<port>` (or of a field `<replica>|<stream id>`): streams
 * from one address are one client in the split, on every replica.
 */
export function clientOf(streamOrField: string): string {
  const id = streamOrField.slice(streamOrField.lastIndexOf('|') + 1);
  const peer = id.slice(id.indexOf('@') + 1);
  const colon = peer.lastIndexOf(':');
  return colon < 0 ? peer : peer.slice(0, colon);
}

/** The stream id under which the streams of one address that ended keep counting (one entry per address). */
export const graceStream = (streamId: string): string => `ended@${clientOf(streamId)}:0`;

/** `share:demand:expiresAtMs` (demand empty when not measured yet); undefined when malformed. */
function parseEntry(value: string): { share: number; demand: number | undefined; expiresAtMs: number } | undefined {
  const [share, demand, expires] = value.split(':');
  const s = Number(share);
  const e = Number(expires);
  const d = demand === '' || demand === undefined ? undefined : Number(demand);
  if (!Number.isFinite(s) || s < 0 || !Number.isFinite(e) || (d !== undefined && !(Number.isFinite(d) && d >= 0))) return undefined;
  return { share: Math.floor(s), demand: d, expiresAtMs: e };
}

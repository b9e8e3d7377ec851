import type { AlgorithmName } from '../algorithms/types.js';
import type { LeaseSpec } from '../algorithms/lease-support.js';

/** One limit to check (and maybe count) for one request. */
export interface LimitCheck {
  /** Storage key of this limit's state, from core/keys.ts; the store uses it as it is. */
  readonly key: string;
  readonly algorithm: AlgorithmName;
  /** L: requests per window (integer >= 0). */
  readonly limit: number;
  /** W: window in milliseconds (integer > 0). */
  readonly windowMs: number;
  /** token_bucket capacity / leaky_bucket tolerance (integer >= 1); ignored by window algorithms. */
  readonly burst: number;
  /** Hits to add (integer >= 0); 0 checks without counting. */
  readonly hits: number;
  /** False for shadow-mode limits: their rejection does not veto the batch. */
  readonly enforce: boolean;
  /**
   * 'envoy': a fixed_window check whose key is envoyproxy/ratelimit's (keys.ts envoyCounterKey); on Redis its
   * state is the reference's plain integer counter (INCRBY + EXPIRE) instead of "<start>:<count>". Other stores
   * ignore it (the key names one window, so the ordinary fixed_window state is equivalent).
   */
  readonly keyFormat?: 'envoy';
  /**
   * The limit's `lease:`: a store that supports leases (src/lease/lease-store.ts, over Redis) may decide this
   * check from units leased to this replica. Others ignore it.
   */
  readonly lease?: LeaseSpec;
}

/** What the store reports for one LimitCheck after the batch was decided. */
export interface LimitOutcome {
  /** This limit alone admits the hits. */
  readonly allowed: boolean;
  /** Quota left after the batch: counted if the batch was admitted and this check allowed, else the state as it was. */
  readonly remaining: number;
  /** Milliseconds; see AlgorithmOutcome.resetMs. */
  readonly resetMs: number;
}

export interface ApplyOptions {
  /**
   * Absolute epoch-ms deadline of the caller (the gRPC deadline less a margin).
   * A remote store gives up by then and rejects with a StoreError.
   */
  readonly deadlineMs?: number;
}

/** What a remote store knows about itself, for readiness and health (src/server/service-health.ts). */
export interface StoreHealth {
  /** A connection is open. */
  readonly connected: boolean;
  /** Connected and the last decisions (or the idle probe) succeeded: the store decides right now. */
  readonly healthy: boolean;
  /** Why it is not healthy, e.g. "NOPERM ...", "WRONGPASS ...", "not connected: ECONNREFUSED ...". */
  readonly problem?: string;
}

/**
 * Where counters live. One call decides one request atomically:
 * every check is evaluated at `nowMs` against the current state; the batch is admitted when every
 * check with `enforce` is allowed; only then is each allowed check with hits > 0 committed.
 * A rejected batch changes nothing (a rejected request consumes no quota).
 *
 * Implementations: memory (embedded default) and Redis. Over limit is a result, never an exception;
 * a store that cannot answer rejects the promise with a StoreError (core/errors.ts).
 */
export interface CounterStore {
  readonly kind: string;
  apply(checks: readonly LimitCheck[], nowMs: number, options?: ApplyOptions): Promise<LimitOutcome[]>;
  /** True while the store can answer (Redis: connected and deciding successfully); memory is always ready. */
  isReady(): boolean;
  /** The store's own state (Redis); absent for stores that are always healthy (memory). */
  health?(): StoreHealth;
  close(): Promise<void>;
}

/** A store's health: its own health() when it has one, else what isReady() says (an in-process store is connected). */
export function healthOf(store: CounterStore): StoreHealth {
  return store.health?.() ?? { connected: true, healthy: store.isReady() };
}

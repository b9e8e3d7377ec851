import type { AlgorithmName } from '../vocab/algorithm-names.js';
import type { LeaseAlgorithm, LeaseSpec } from '../algorithms/lease-support.js';
import type { CapacityCheck } from '../vocab/capacity-rule.js';

/** The algorithms a refund applies to; leaky_bucket keeps token_bucket's state (giveBackAlgorithm). */
export type RefundAlgorithm = LeaseAlgorithm | 'leaky_bucket';

/** The give-back arithmetic (algorithms/give-back.ts, lua/lease/give_back.lua) of a refund's algorithm. */
export function giveBackAlgorithm(algorithm: RefundAlgorithm): LeaseAlgorithm {
  return algorithm === 'leaky_bucket' ? 'token_bucket' : algorithm;
}

/** One limit to check (and maybe count) for one request. */
export interface LimitCheck {
  /** Storage key of this limit's state, from vocab/keys.ts; the store uses it as it is. */
  readonly key: string;
  readonly algorithm: AlgorithmName;
  /** L: requests per window (integer >= 0). */
  readonly limit: number;
  /** W: window in milliseconds (integer > 0). */
  readonly windowMs: number;
  /**
   * fixed_window only: the window is [windowStartMs, windowStartMs + W) rather than the epoch-aligned one holding
   * now (a calendar window, whose key names its start). On Redis the state is a plain counter expiring at the window's end.
   */
  readonly windowStartMs?: number;
  /** token_bucket capacity / leaky_bucket tolerance (integer >= 1); ignored by window algorithms. */
  readonly burst: number;
  /** Hits to add (integer >= 0); 0 checks without counting. */
  readonly hits: number;
  /** False for shadow-mode limits: their rejection does not veto the batch. */
  readonly enforce: boolean;
  /**
   * When the hits are counted beyond the usual "this check allows them and the batch is admitted"
   * (fixed_window and sliding_window_counter only, whose state is a count that may run past the limit):
   * - 'admitted': also when this check is over its limit, if the batch is admitted (shadow mode: counted and
   *   reported, never enforced, as envoyproxy/ratelimit does);
   * - 'always': whatever this check's or the batch's outcome (a rule's `count_every_hit`: a cost charged after
   *   the response must count even when it crosses the limit). On a rejected batch these checks are counted
   *   one after the other on the stored state, the batch's other checks writing nothing.
   * A dry run (check-only) counts nothing.
   */
  readonly countOver?: 'admitted' | 'always';
  /**
   * 'envoy': a fixed_window check whose key is envoyproxy/ratelimit's (keys.ts envoyCounterKey); on Redis its
   * state is the reference's plain integer counter (INCRBY + EXPIRE) instead of "<start>:<count>". Other stores
   * ignore it (the key names one window, so the ordinary fixed_window state is equivalent).
   */
  readonly keyFormat?: 'envoy';
  /**
   * keyFormat 'envoy' on Redis: seconds added to the counter's expiry (the unit), as the reference adds a random
   * jitter up to EXPIRATION_JITTER_MAX_SECONDS so that a window's keys do not all expire at once. The Redis store
   * draws it per check when configured; absent = 0.
   */
  readonly expiryJitterS?: number;
  /** The store-side part of the limit's `on_limit` (storage/on-limit-batch.ts); absent for plain rejection. */
  readonly onLimit?: StoreOnLimit;
  /**
   * Elastic throttling (src/throttling): a check that `limit` rejects is still admitted while the same
   * algorithm admits it at `max` and the rule's aggregate use (state under `key`, counting every admitted hit
   * of every client of the rule, read at the largest limit) plus the hits stays <= `capacity`. Every admitted
   * hit of the check is also added to the aggregate. `use`, when set, is the aggregate use read beforehand by
   * the caller (Redis Cluster, where the aggregate lives in another slot): the store then neither reads nor
   * writes the aggregate key; 'ask' means not read yet: where borrowing would need it, the check is rejected
   * with needsAggregate and vetoes the batch (nothing written), for the caller to ask again with the number.
   * `algorithm` counts the aggregate (default: the check's own).
   */
  readonly elastic?: {
    readonly max: number;
    readonly capacity: number;
    readonly key: string;
    readonly use?: number | 'ask';
    readonly algorithm?: AlgorithmName;
  };
  /**
   * Rate-based ban: while the state under `key` holds an end later than nowMs, the check is rejected without
   * being evaluated or counted (resetMs = the ban's remaining time). An enforced check with hits > 0 that the
   * algorithm rejects starts a ban of `ms` (written even when the batch is a dry run or rejected).
   */
  readonly ban?: { readonly ms: number; readonly key: string };
  /**
   * The limit's `lease:`: a store that supports leases (src/lease/lease-store.ts, over Redis) may decide this
   * check from units leased to this replica. Others ignore it.
   */
  readonly lease?: LeaseSpec;
  /** A capacity limit (core/capacity-store.ts decides it in process from the granted share); stores never see it. */
  readonly capacity?: CapacityCheck;
}

/**
 * What the store does at the limit for one check (on_limit), decided in the same atomic step
 * as the check itself:
 * - maxDelayMs > 0 (token_bucket / leaky_bucket): admit a request whose wait is at most this long by
 *   reserving its slot; the outcome's delayMs is the wait.
 * - degradeKey: over the limit, admit anyway (outcome `degraded`), at most degradeMax hits per window counted
 *   under degradeKey (a fixed window of the limit's length); degradeMax absent = no bound.
 * - backoffKey: count consecutive rejections of this check's key under backoffKey (kept backoffTtlMs ms),
 *   reported as `rejections`; reset by the first admitted request that counts hits.
 * The keys come from vocab/keys.ts onLimitKey (same Redis Cluster slot as `key`).
 */
export interface StoreOnLimit {
  readonly maxDelayMs?: number;
  readonly degradeKey?: string;
  readonly degradeMax?: number;
  readonly backoffKey?: string;
  readonly backoffTtlMs?: number;
}

/** What the store reports for one LimitCheck after the batch was decided. */
export interface LimitOutcome {
  /** This limit alone admits the hits. */
  readonly allowed: boolean;
  /** Quota left after the batch: counted if the batch was admitted and this check allowed, else the state as it was. */
  readonly remaining: number;
  /** Milliseconds; see AlgorithmOutcome.resetMs. */
  readonly resetMs: number;
  /** Rejected by FAILURE_MODE=closed because the store could not answer (not by the limit itself). */
  readonly storeFailure?: boolean;
  /** on_limit delay: admitted by reserving a slot this many ms ahead (only when > 0). */
  readonly delayMs?: number;
  /** on_limit degrade: over the limit, admitted as degraded. */
  readonly degraded?: boolean;
  /** on_limit exponential_backoff: consecutive rejections of this key, this one included (only when rejected). */
  readonly rejections?: number;
  /** Set (true) only when an elastic check was admitted above its own limit by borrowing. */
  readonly borrowed?: boolean;
  /** Set only for a check with a ban: 'active' = rejected by a live ban; 'started' = this rejection started one. */
  readonly ban?: 'active' | 'started';
  /** Set only when an elastic check with use 'ask' would need the aggregate to decide (see LimitCheck.elastic). */
  readonly needsAggregate?: boolean;
}

export interface ApplyOptions {
  /**
   * Absolute epoch-ms deadline of the caller (the gRPC deadline less a margin).
   * A remote store gives up by then and rejects with a StoreError.
   */
  readonly deadlineMs?: number;
}

/**
 * Units given back to one limit (a refund: a descriptor sent with Envoy's `is_negative_hits`), as a lease gives
 * units back (algorithms/give-back.ts): a count never below 0, only into the window starting at windowStart
 * (window algorithms); a bucket never above full (token_bucket state, which leaky_bucket shares).
 */
export interface Refund {
  readonly key: string;
  readonly algorithm: RefundAlgorithm;
  /** L the state is counted under (a bucket's state only takes tokens back under the same L). */
  readonly limit: number;
  readonly windowMs: number;
  readonly units: number;
  readonly windowStart: number;
  /** A calendar window's counter (fixed_window, keyed by windowStart; on Redis a plain integer): windowMs is its length. */
  readonly calendar?: true;
}

/** What a remote store knows about itself, for readiness and health (src/server/health/service-health.ts). */
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
 * check with `enforce` is allowed; only then is each allowed check with hits > 0 committed (and each check
 * whose `countOver` says so). A rejected batch changes nothing (a rejected request consumes no quota) but for
 * the checks with countOver 'always'.
 *
 * Implementations: memory (embedded default) and Redis. Over limit is a result, never an exception;
 * a store that cannot answer rejects the promise with a StoreError (vocab/errors.ts).
 */
export interface CounterStore {
  readonly kind: string;
  apply(checks: readonly LimitCheck[], nowMs: number, options?: ApplyOptions): Promise<LimitOutcome[]>;
  /** Gives refunded units back, each atomically on its key; a store without it ignores refunds. */
  refund?(refunds: readonly Refund[], nowMs: number): Promise<void>;
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

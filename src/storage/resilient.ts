/**
 * A CounterStore that always answers by the request's deadline: it asks the primary (Redis) and, when the
 * primary fails with a StoreError, is not connected, or is slower than the deadline, answers by the failure
 * mode instead:
 *
 * - open:   every check allowed (remaining = limit, reset = window). Availability over accuracy (default).
 * - closed: every enforced check rejected (remaining 0, reset = window); shadow checks are answered as open,
 *           since they never decide.
 * - local:  decided by an in-process store at limit / expectedReplicas (floor, at least 1; 0 stays 0), so
 *           that N replicas each counting locally admit about what the shared limit would.
 *
 * When even the fallback cannot answer (the local store fails), the call rejects with a StoreError, which
 * the server maps to gRPC UNAVAILABLE (Envoy's failure_mode_deny then decides).
 *
 * A primary call abandoned at the deadline is not counted later: the Redis store sends its give-up time with
 * the call, and the script refuses to run past it (batch.lua ARGV[3]); a commit that still lands after the
 * give-up (within the clock guard) is counted in ratelimit_redis_late_commits_total.
 */
import type { Clock } from '../vocab/clock.js';
import { StoreError } from '../vocab/errors.js';
import { withDeadline } from './deadline.js';
import { healthOf, type ApplyOptions, type CounterStore, type LimitCheck, type LimitOutcome, type Refund, type StoreHealth } from './counter-store.js';

export type FailureMode = 'open' | 'closed' | 'local';
export const FAILURE_MODES: readonly FailureMode[] = ['open', 'closed', 'local'];

export interface ResilientStoreOptions {
  readonly mode: FailureMode;
  /** The in-process store for mode `local` (a MemoryStore); required with it. */
  readonly local?: CounterStore;
  /** Replicas sharing the primary; `local` divides limits by it (integer >= 1). */
  readonly expectedReplicas: number;
  /**
   * Time kept before the deadline to compute the fallback answer and send the reply (default 5 ms): the
   * primary is given up on at `deadlineMs - timeoutMarginMs`.
   */
  readonly timeoutMarginMs?: number;
  /**
   * Deadline of a call that comes without one (the /json API, the CLI), ms from its start; default: none
   * (the Redis client's own command timeout ends it). Calls with a deadline are bounded by that alone.
   */
  readonly noDeadlineTimeoutMs?: number;
  readonly clock: Clock;
  /**
   * The primary settles every apply() by the `deadlineMs` it is given (the Redis store does, with the same
   * guard: deadline.ts), so this store need not race it with a timer of its own (a timer, a promise and
   * four closures per request, for a race the primary's own timer, created first, always wins). Default false.
   */
  readonly primaryKeepsDeadline?: boolean;
  /** Called on every fallback answer, for a metric and a (throttled) log line. */
  readonly onFallback?: (mode: FailureMode, reason: string, error: unknown) => void;
}

export interface ResilientStoreStats {
  readonly fallbacks: Readonly<Record<FailureMode, number>>;
}

export class ResilientStore implements CounterStore {
  readonly kind: string;
  private readonly margin: number;
  private readonly fallbacks: Record<FailureMode, number> = { open: 0, closed: 0, local: 0 };

  constructor(
    private readonly primary: CounterStore,
    private readonly options: ResilientStoreOptions,
  ) {
    if (!FAILURE_MODES.includes(options.mode)) throw new Error(`unknown failure mode '${String(options.mode)}'`);
    if (options.mode === 'local' && !options.local) throw new Error("failure mode 'local' needs a local store");
    if (!Number.isInteger(options.expectedReplicas) || options.expectedReplicas < 1) {
      throw new Error(`expectedReplicas must be an integer >= 1, got ${options.expectedReplicas}`);
    }
    this.kind = primary.kind;
    this.margin = options.timeoutMarginMs ?? 5;
  }

  /**
   * Refunds go to the primary only (the local fallback's counts are approximate anyway). One the primary cannot
   * take is dropped, never thrown: the call it came with is still answered (a refund errs on the safe side).
   */
  async refund(refunds: readonly Refund[], nowMs: number): Promise<void> {
    if (!this.primaryConnected()) return;
    await this.primary.refund?.(refunds, nowMs).catch(() => undefined);
  }

  async apply(checks: readonly LimitCheck[], nowMs: number, options?: ApplyOptions): Promise<LimitOutcome[]> {
    if (checks.length === 0) return [];
    // Skip the primary only when it has no connection: a connected but failing store is still asked, so
    // that one good answer is used at once (its health then recovers without waiting for a probe).
    if (!this.primaryConnected()) {
      return this.fallback(checks, nowMs, 'not connected', new StoreError('STORE_UNAVAILABLE', 'primary store not connected'));
    }
    try {
      return await this.askPrimary(checks, nowMs, options?.deadlineMs);
    } catch (error) {
      if (!(error instanceof StoreError)) throw error;
      return this.fallback(checks, nowMs, error.code === 'STORE_TIMEOUT' ? 'timeout' : 'error', error);
    }
  }

  /** With open or local we can always answer; with closed, only while the primary can. */
  isReady(): boolean {
    return this.options.mode === 'closed' ? this.primary.isReady() : true;
  }

  private primaryConnected(): boolean {
    const health = this.primary.health?.();
    return health ? health.connected : this.primary.isReady();
  }

  /** The primary's own state (whatever the failure mode answers meanwhile). */
  health(): StoreHealth {
    return healthOf(this.primary);
  }

  stats(): ResilientStoreStats {
    return { fallbacks: { ...this.fallbacks } };
  }

  async close(): Promise<void> {
    await Promise.all([this.primary.close(), this.options.local?.close()]);
  }

  /**
   * The primary's answer, or a STORE_TIMEOUT rejection at the deadline less the margin. That deadline is the
   * caller's (however long, up to DECISION_MAX_WAIT_MS): the Redis client's command timeout is set above
   * every deadline (store-factory.ts), so a slow but healthy Redis answers for real; a call given up here
   * expires in Redis at the same instant (batch.lua ARGV[3]) and so is counted at most once.
   */
  private askPrimary(checks: readonly LimitCheck[], nowMs: number, deadlineMs: number | undefined): Promise<LimitOutcome[]> {
    const budget = this.options.noDeadlineTimeoutMs;
    if (deadlineMs === undefined && budget === undefined) return this.primary.apply(checks, nowMs);
    const giveUpAt = deadlineMs !== undefined ? deadlineMs - this.margin : this.options.clock.nowMs() + budget!;
    if (this.options.primaryKeepsDeadline === true) return this.primary.apply(checks, nowMs, { deadlineMs: giveUpAt });
    return withDeadline(() => this.primary.apply(checks, nowMs, { deadlineMs: giveUpAt }), giveUpAt, this.options.clock);
  }

  private async fallback(checks: readonly LimitCheck[], nowMs: number, reason: string, error: unknown): Promise<LimitOutcome[]> {
    const mode = this.options.mode;
    this.fallbacks[mode]++;
    this.options.onFallback?.(mode, reason, error);
    if (mode === 'open') return checks.map(openOutcome);
    if (mode === 'closed') return checks.map((c) => (c.enforce ? closedOutcome(c) : openOutcome(c)));
    const scaled = checks.map((c) => scaleCheck(c, this.options.expectedReplicas));
    try {
      return await this.options.local!.apply(scaled, nowMs);
    } catch (localError) {
      throw new StoreError('STORE_UNAVAILABLE', `primary store failed (${reason}) and the local fallback failed too`, {
        cause: localError,
      });
    }
  }
}

function openOutcome(check: LimitCheck): LimitOutcome {
  return { allowed: true, remaining: check.limit, resetMs: check.windowMs };
}

function closedOutcome(check: LimitCheck): LimitOutcome {
  return { allowed: false, remaining: 0, resetMs: check.windowMs, storeFailure: true };
}

/** This replica's share of a limit: floor(n / replicas), at least 1 unless the limit is 0 (rejects all). */
export function localShare(n: number, replicas: number): number {
  if (n <= 0) return 0;
  return Math.max(1, Math.floor(n / replicas));
}

/** The check as the local store sees it: limit and burst scaled to this replica's share. */
export function scaleCheck(check: LimitCheck, replicas: number): LimitCheck {
  return {
    ...check,
    limit: localShare(check.limit, replicas),
    // burst is at least 1 by contract; a token bucket's capacity shrinks with its refill rate.
    burst: Math.max(1, localShare(check.burst, replicas)),
    // elastic (throttling): the client's max and the rule's capacity shrink the same way.
    ...(check.elastic !== undefined
      ? { elastic: { ...check.elastic, max: localShare(check.elastic.max, replicas), capacity: localShare(check.elastic.capacity, replicas) } }
      : {}),
  };
}

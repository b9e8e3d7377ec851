/**
 * Two stores behind one (REDIS_PERSECOND=true): limits whose window is one second (`unit: second`, as
 * envoyproxy/ratelimit routes them to its per-second Redis) are decided by `perSecond`, every other limit by
 * `main`. Each part is decided atomically in its own store, both at once; the request is admitted only when
 * both parts are. When one part admits and the other rejects, the admitting part's hits are given back
 * (`refund`), so a rejected request consumes no quota in either store: between the two steps another request
 * may see those hits and be rejected too (a false rejection near a limit, never an admission past one). Hits
 * that cannot be given back stay counted (the safe side): those of a store that failed to take them back, and
 * of the limits a refund cannot lower (sliding_window_log, and the reference's own counter keys).
 *
 * Each store has its own failure-mode guard: a store that cannot answer has its part answered by FAILURE_MODE
 * while the other keeps deciding its own limits.
 */
import type { ApplyOptions, CounterStore, LimitCheck, LimitOutcome, Refund, StoreHealth } from '../counter-store.js';
import { healthOf } from '../counter-store.js';

const SECOND_MS = 1000;

/** Whether a check goes to the per-second store: its window is one second. */
export function isPerSecond(check: Pick<LimitCheck, 'windowMs'>): boolean {
  return check.windowMs === SECOND_MS;
}

export class PerSecondSplitStore implements CounterStore {
  readonly kind: string;

  constructor(
    private readonly main: CounterStore,
    private readonly perSecond: CounterStore,
  ) {
    this.kind = main.kind;
  }

  async apply(checks: readonly LimitCheck[], nowMs: number, options?: ApplyOptions): Promise<LimitOutcome[]> {
    const fast: number[] = [];
    const rest: number[] = [];
    checks.forEach((c, i) => (isPerSecond(c) ? fast : rest).push(i));
    if (fast.length === 0) return this.main.apply(checks, nowMs, options);
    if (rest.length === 0) return this.perSecond.apply(checks, nowMs, options);
    const parts = [
      { store: this.perSecond, at: fast },
      { store: this.main, at: rest },
    ];
    const answers = await Promise.allSettled(
      parts.map((p) =>
        p.store.apply(
          p.at.map((i) => checks[i]!),
          nowMs,
          options,
        ),
      ),
    );
    const admitted = answers.map((a, k) => a.status === 'fulfilled' && parts[k]!.at.every((i, j) => !checks[i]!.enforce || a.value[j]!.allowed));
    const failed = answers.find((a): a is PromiseRejectedResult => a.status === 'rejected');
    if (failed !== undefined || !admitted.every(Boolean)) {
      // The request is rejected (or cannot be answered): what the admitting parts counted goes back.
      await Promise.all(
        parts.map((p, k) => {
          const a = answers[k]!;
          return admitted[k] && a.status === 'fulfilled' ? this.giveBack(p.store, p.at, a.value, checks, nowMs) : Promise.resolve();
        }),
      );
    }
    if (failed !== undefined) throw failed.reason;
    const out = new Array<LimitOutcome>(checks.length);
    const rejected = !admitted.every(Boolean);
    parts.forEach((p, k) => {
      const values = (answers[k] as PromiseFulfilledResult<LimitOutcome[]>).value;
      p.at.forEach((i, j) => (out[i] = rejected && admitted[k] ? uncounted(checks[i]!, values[j]!) : values[j]!));
    });
    return out;
  }

  /** Gives back the hits an admitted part counted, for a request the other part rejected. */
  private async giveBack(
    store: CounterStore,
    at: readonly number[],
    outcomes: readonly LimitOutcome[],
    checks: readonly LimitCheck[],
    nowMs: number,
  ): Promise<void> {
    const refunds: Refund[] = [];
    at.forEach((i, j) => {
      const c = checks[i]!;
      const counted = c.hits > 0 && c.countOver !== 'always' && (outcomes[j]!.allowed || c.countOver === 'admitted');
      if (!counted || c.keyFormat === 'envoy' || c.algorithm === 'sliding_window_log') return;
      refunds.push({ key: c.key, algorithm: c.algorithm, limit: c.limit, windowMs: c.windowMs, units: c.hits, windowStart: nowMs - (nowMs % c.windowMs) });
    });
    if (refunds.length > 0) await store.refund?.(refunds, nowMs).catch(() => undefined);
  }

  async refund(refunds: readonly Refund[], nowMs: number): Promise<void> {
    const fast = refunds.filter((r) => isPerSecond(r));
    const rest = refunds.filter((r) => !isPerSecond(r));
    if (fast.length > 0) await this.perSecond.refund?.(fast, nowMs);
    if (rest.length > 0) await this.main.refund?.(rest, nowMs);
  }

  isReady(): boolean {
    return this.main.isReady() && this.perSecond.isReady();
  }

  /** Both stores' state: healthy when both are; the problem of the one that is not, named. */
  health(): StoreHealth {
    const main = healthOf(this.main);
    const fast = healthOf(this.perSecond);
    const problem = !main.healthy ? main.problem : !fast.healthy ? `per-second Redis: ${fast.problem ?? 'not healthy'}` : undefined;
    return { connected: main.connected && fast.connected, healthy: main.healthy && fast.healthy, ...(problem === undefined ? {} : { problem }) };
  }

  async close(): Promise<void> {
    await Promise.all([this.main.close(), this.perSecond.close()]);
  }
}

/** The outcome of a check whose hits were given back: the quota as it was before the request. */
function uncounted(check: LimitCheck, outcome: LimitOutcome): LimitOutcome {
  if (!outcome.allowed || check.hits === 0) return outcome;
  return { ...outcome, remaining: Math.min(check.limit, outcome.remaining + check.hits) };
}

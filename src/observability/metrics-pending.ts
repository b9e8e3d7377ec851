/**
 * Counter increments on the request path kept as plain numbers and handed to prom-client when the counters
 * are read (their `collect`, which every scrape and every `get()` runs first), so a scrape is exact.
 *
 * Why: prom-client hashes the label values into a string and returns a fresh object on every `inc`, even
 * through a labelled child; with two to three increments per descriptor that was most of the metrics' cost
 * per descriptor. Here an increment is an addition to a number of a series record found once.
 * Memory is bounded by the series themselves: a series is queued for the next flush at most once.
 */
import type { Counter } from 'prom-client';

/** One labelled series across a group of counters (e.g. hits, over, within... of one rule). */
export interface PendingSeries<L extends string> {
  readonly labels: Readonly<Record<L, string>>;
  /** Increments not yet handed over, one per counter of the group, in the group's order. */
  readonly counts: Float64Array;
  queued: boolean;
}

export class PendingCounts<L extends string> {
  private dirty: PendingSeries<L>[] = [];

  /**
   * `counters` share the label names `L`; each must be made with a `collect` that calls this group's `flush`
   * (made before the group: through a forwarding function, as metrics.ts and metrics-capacity.ts do).
   */
  constructor(private readonly counters: readonly Counter<L>[]) {}

  /** Called from every counter's `collect`: the counters must not have one of their own. */
  readonly flush = (): void => {
    const dirty = this.dirty;
    if (dirty.length === 0) return;
    this.dirty = [];
    for (const s of dirty) {
      s.queued = false;
      for (let i = 0; i < s.counts.length; i++) {
        const n = s.counts[i]!;
        if (n === 0) continue;
        s.counts[i] = 0;
        this.counters[i]!.inc(s.labels as Partial<Record<L, string>>, n);
      }
    }
  };

  series(labels: Readonly<Record<L, string>>): PendingSeries<L> {
    return { labels, counts: new Float64Array(this.counters.length), queued: false };
  }

  add(series: PendingSeries<L>, counter: number, n: number): void {
    series.counts[counter]! += n;
    if (!series.queued) {
      series.queued = true;
      this.dirty.push(series);
    }
  }
}

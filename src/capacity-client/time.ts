/**
 * The client's time source: a clock and a way to wait on it. Injected so that unit tests run the whole client
 * (refresh loop, lease expiry, fallback, limiter spacing) on a fake clock without sleeping. The client library is
 * its own entry point and imports nothing from the server side, so it has its own small interface here.
 */

export interface ClientTime {
  /** Milliseconds since the Unix epoch. Lease expiry times from the server (Unix seconds) are compared with it. */
  nowMs(): number;
  /** Resolves after `ms` (at once when ms ≤ 0); rejects with the signal's reason when `signal` aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}

/** Real time: Date.now and setTimeout. */
export const systemTime: ClientTime = {
  nowMs: () => Date.now(),
  sleep(ms, signal) {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(abortReason(signal!));
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  },
};

interface Sleeper {
  readonly at: number;
  readonly resolve: () => void;
}

/**
 * Time that moves only when told to (tests). `advance` ends the sleeps that are due, in time order, and lets the
 * promise callbacks they wake run before moving on, so a loop that sleeps again sees the clock it expects.
 */
export class FakeTime implements ClientTime {
  private sleepers: Sleeper[] = [];

  constructor(private current = 1_700_000_000_000) {}

  nowMs(): number {
    return this.current;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const sleeper: Sleeper = {
        at: this.current + ms,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = (): void => {
        this.sleepers = this.sleepers.filter((s) => s !== sleeper);
        reject(abortReason(signal!));
      };
      this.sleepers.push(sleeper);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Sleeps not yet over. */
  get pending(): number {
    return this.sleepers.length;
  }

  /** Moves the clock on by `ms`, waking each due sleeper at its own time (bounded: 100,000 wake-ups). */
  async advance(ms: number): Promise<void> {
    const end = this.current + ms;
    for (let i = 0; i < 100_000; i++) {
      await flushMicrotasks();
      const next = this.sleepers.reduce<Sleeper | undefined>((a, s) => (a === undefined || s.at < a.at ? s : a), undefined);
      if (next === undefined || next.at > end) break;
      this.current = Math.max(this.current, next.at);
      this.sleepers = this.sleepers.filter((s) => s !== next);
      next.resolve();
    }
    this.current = end;
    await flushMicrotasks();
  }
}

/** Lets queued promise callbacks (several hops deep) run. */
async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

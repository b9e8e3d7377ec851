/**
 * The wait before reconnecting to the xDS server: XDS_CLIENT_BACKOFF_INITIAL_INTERVAL first, doubling after each
 * failed attempt up to XDS_CLIENT_BACKOFF_MAX_INTERVAL; with XDS_CLIENT_BACKOFF_JITTER each wait is spread by
 * ±XDS_CLIENT_BACKOFF_RANDOM_FACTOR of itself (never above the maximum), so that replicas do not reconnect in step.
 */
export interface BackoffOptions {
  readonly initialMs: number;
  readonly maxMs: number;
  readonly randomFactor: number;
  readonly jitter: boolean;
}

export class Backoff {
  private attempt = 0;

  constructor(
    private readonly options: BackoffOptions,
    private readonly random: () => number = Math.random,
  ) {}

  /** The next wait, in ms; each call counts one more failed attempt. */
  next(): number {
    const { initialMs, maxMs, randomFactor, jitter } = this.options;
    const base = Math.min(maxMs, initialMs * 2 ** Math.min(this.attempt, 40));
    this.attempt++;
    if (!jitter || randomFactor <= 0) return base;
    const spread = Math.min(randomFactor, 1) * base;
    return Math.max(0, Math.min(maxMs, Math.round(base - spread + 2 * spread * this.random())));
  }

  reset(): void {
    this.attempt = 0;
  }
}

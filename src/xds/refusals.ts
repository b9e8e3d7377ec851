/**
 * What the client does about a run of refused responses, whatever was wrong with them (a message that does not
 * decode, a resource of another type, a set that fails validation, the same set sent again):
 *
 * - pacing: the first NACK after an accepted set goes at once; each NACK after it waits REPEAT_FIRST_MS, doubling
 *   up to REPEAT_MAX_MS. A server that answers every NACK with another bad response (go-control-plane re-sends
 *   at once; a broken one may send garbage) thus gets at most a few NACKs a second;
 * - logging: a refusal is logged once; the same error again is not logged, and a different one is logged at most
 *   once a second, the line saying how many refusals went unlogged since the last one.
 *
 * An accepted set ends the run.
 */
export const REPEAT_FIRST_MS = 50;
export const REPEAT_MAX_MS = 500;
const LOG_EVERY_MS = 1000;

export class RefusalRun {
  /** Wait before the next NACK (0: at once). */
  private waitMs = 0;
  private lastLogged: string | undefined;
  private lastLogAt = -Infinity;
  private unlogged = 0;

  constructor(private readonly now: () => number) {}

  /** The wait before this NACK, ms; each call makes the next one longer. */
  nextWait(): number {
    const wait = this.waitMs;
    this.waitMs = wait === 0 ? REPEAT_FIRST_MS : Math.min(REPEAT_MAX_MS, wait * 2);
    return wait;
  }

  /** Whether to log this refusal; `unlogged` is the count of refusals not logged before it. */
  shouldLog(error: string): { log: false } | { log: true; unlogged: number } {
    const now = this.now();
    if (error === this.lastLogged || now - this.lastLogAt < LOG_EVERY_MS) {
      this.unlogged++;
      return { log: false };
    }
    const unlogged = this.unlogged;
    this.lastLogged = error;
    this.lastLogAt = now;
    this.unlogged = 0;
    return { log: true, unlogged };
  }

  /** A set was accepted: the next refusal is answered at once and logged. */
  reset(): void {
    this.waitMs = 0;
    this.lastLogged = undefined;
    this.lastLogAt = -Infinity;
    this.unlogged = 0;
  }
}

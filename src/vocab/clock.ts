/** Time source, injected at the composition root so that tests drive time and never sleep. */
export interface Clock {
  /** Milliseconds since the Unix epoch, integral. */
  nowMs(): number;
}

export const systemClock: Clock = { nowMs: () => Date.now() };

/** A clock that moves only when told to; for tests and benchmarks. */
export class FakeClock implements Clock {
  constructor(private current = 1_700_000_000_000) {}
  nowMs(): number {
    return this.current;
  }
  set(ms: number): void {
    this.current = ms;
  }
  advance(ms: number): void {
    this.current += ms;
  }
}

/**
 * A deadline further away than setTimeout can wait (2^31 − 1 ms) is a long wait, not an immediate one: Node
 * fires an overflowing delay after 1 ms (with a TimeoutOverflowWarning), which would time a store call out at once.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { withDeadline } from '../../../src/storage/deadline.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import { clockTimer, timerDelay, MAX_TIMER_MS } from '../../../src/vocab/timer.js';

let warnings: string[] = [];
const onWarning = (w: Error) => void warnings.push(`${w.name}: ${w.message}`);
beforeEach(() => {
  warnings = [];
  process.on('warning', onWarning);
});
afterEach(() => {
  process.off('warning', onWarning);
});

/** Resolves on the next turns of the event loop, after a 1 ms timer would have fired. */
function settleFor(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe('deadlines past what setTimeout can wait', () => {
  it('clamps the delay to 2^31 - 1 ms', () => {
    expect(timerDelay(-5)).toBe(0);
    expect(timerDelay(1500)).toBe(1500);
    expect(timerDelay(95_900_201_740)).toBe(MAX_TIMER_MS);
  });

  it('a store call under a deadline years away is not timed out', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    let finish!: (v: string) => void;
    const work = new Promise<string>((resolve) => (finish = resolve));
    let outcome: string | undefined;
    const call = withDeadline(() => work, clock.nowMs() + 95_900_201_740, clock).then(
      (v) => (outcome = v),
      (e: Error) => (outcome = e.message),
    );
    await settleFor(20);
    expect(outcome).toBeUndefined(); // still waiting for the store, as it should
    finish('answered');
    await call;
    expect(outcome).toBe('answered');
    await settleFor(5);
    expect(warnings.filter((w) => w.startsWith('TimeoutOverflowWarning'))).toEqual([]);
  });

  it("the engine's waits (on_limit delay) do not end early either", async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const controller = new AbortController();
    let ended = false;
    const wait = clockTimer(clock)
      .waitUntil(clock.nowMs() + 95_900_201_740, controller.signal)
      .then(
        () => (ended = true),
        () => {},
      );
    await settleFor(20);
    expect(ended).toBe(false);
    controller.abort();
    await wait;
    expect(warnings.filter((w) => w.startsWith('TimeoutOverflowWarning'))).toEqual([]);
  });
});

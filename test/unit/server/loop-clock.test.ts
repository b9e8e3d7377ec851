/**
 * The loop clock (server/grpc/loop-clock.ts): it bounds how long a call waited unseen while the event loop was busy,
 * and it ticks only while calls come: at rest it stops, and the next call starts it again without counting a
 * wait. Loop delay cannot be faked, so the busy case blocks the loop for real.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LoopClock } from '../../../src/server/grpc/loop-clock.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const block = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

let clock: LoopClock | undefined;
afterEach(() => clock?.stop());

describe('LoopClock', () => {
  it('counts the time the loop was blocked as unseen wait while calls come', async () => {
    clock = new LoopClock().start();
    expect(clock.unseenWaitMs()).toBe(0);
    await sleep(10);
    block(40);
    expect(clock.unseenWaitMs()).toBeGreaterThanOrEqual(30);
  });

  it('does not tick at rest: it stops after a second without calls and the next call restarts it with no wait counted', async () => {
    clock = new LoopClock().start();
    expect(clock.ticking).toBe(false); // nothing ticks before the first call
    clock.unseenWaitMs();
    expect(clock.ticking).toBe(true);
    await vi.waitFor(() => expect(clock!.ticking).toBe(false), { timeout: 5000, interval: 50 });
    // the stale last tick of the rest is not a wait: the loop had nothing to serve
    expect(clock.unseenWaitMs()).toBe(0);
    expect(clock.ticking).toBe(true);
    await sleep(10);
    block(40);
    expect(clock.unseenWaitMs()).toBeGreaterThanOrEqual(30);
  });

  it('after stop, neither ticks again nor reports the time since its last tick as a wait', async () => {
    clock = new LoopClock().start();
    clock.unseenWaitMs();
    clock.stop();
    await sleep(20);
    expect(clock.unseenWaitMs()).toBe(0);
    expect(clock.ticking).toBe(false);
  });
});

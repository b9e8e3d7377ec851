/**
 * The engine's timers stop when the wait's signal aborts: the production timer clears its
 * setTimeout (no timer left behind a cancelled call) and both reject with the signal's reason.
 */
import { describe, expect, it } from 'vitest';
import { FakeClock, systemClock } from '../../../src/vocab/clock.js';
import { clockTimer, FakeTimer } from '../../../src/vocab/timer.js';

describe('Timer.waitUntil with an abort signal', () => {
  it('clockTimer: an abort clears the timeout at once and rejects with the reason', async () => {
    const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timeouts();
    const timer = clockTimer(systemClock);
    const controller = new AbortController();
    const wait = timer.waitUntil(systemClock.nowMs() + 60_000, controller.signal);
    expect(timeouts()).toBe(before + 1);
    expect(timer.pending).toBe(1);
    const reason = new Error('call cancelled');
    controller.abort(reason);
    await expect(wait).rejects.toBe(reason);
    expect(timer.pending).toBe(0);
    // Node's own count of live timers of this process agrees: nothing of the 60 s wait is left.
    expect(timeouts()).toBe(before);
  });

  it('clockTimer: a wait that ends on time resolves, and an already aborted signal rejects without a timer', async () => {
    const timer = clockTimer(systemClock);
    const controller = new AbortController();
    await timer.waitUntil(systemClock.nowMs() + 5, controller.signal);
    expect(timer.pending).toBe(0);
    controller.abort(new Error('late'));
    await expect(timer.waitUntil(systemClock.nowMs() + 60_000, controller.signal)).rejects.toThrow('late');
    expect(timer.pending).toBe(0);
  });

  it('FakeTimer: an aborted wait leaves the pending list; the others still end at their time', async () => {
    const timer = new FakeTimer(new FakeClock(1000));
    const a = new AbortController();
    const first = timer.waitUntil(2000, a.signal);
    const second = timer.waitUntil(3000);
    expect(timer.pending).toBe(2);
    a.abort(new Error('gone'));
    await expect(first).rejects.toThrow('gone');
    expect(timer.waitsAt()).toEqual([3000]);
    timer.advance(2000);
    await second;
    expect(timer.pending).toBe(0);
  });
});

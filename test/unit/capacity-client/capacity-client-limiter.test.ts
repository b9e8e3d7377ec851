/**
 * The capacity client's rate limiter on a fake clock: the capacity read as QPS, permits spaced evenly (Doorman's
 * QPS limiter), following capacity changes at once, nothing while the capacity is 0, and every wait bounded
 * (timeout, abort signal, queue size, close).
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { FakeTime, RateLimiter, type CapacityError } from '../../../src/capacity-client/index.js';

class Source extends EventEmitter<{ capacity: [number, number] }> {
  constructor(public capacity: number) {
    super();
  }
  set(capacity: number): void {
    const previous = this.capacity;
    this.capacity = capacity;
    this.emit('capacity', capacity, previous);
  }
}

/** Starts `n` waits and records the fake time each is served at. */
function waitAll(limiter: RateLimiter, time: FakeTime, n: number, options = {}): { at: number[]; errors: string[] } {
  const at: number[] = [];
  const errors: string[] = [];
  const start = time.nowMs();
  for (let i = 0; i < n; i++) {
    limiter.wait(options).then(
      () => at.push(time.nowMs() - start),
      (e: CapacityError) => errors.push(e.code),
    );
  }
  return { at, errors };
}

describe('capacity client limiter', () => {
  it('hands out capacity permits per second, evenly spaced (10 QPS: one every 100 ms, the first at once)', async () => {
    const time = new FakeTime();
    const limiter = new RateLimiter(new Source(10), time);
    const { at } = waitAll(limiter, time, 25);
    await time.advance(2_000);
    expect(at).toEqual(Array.from({ length: 21 }, (_, i) => i * 100));
    expect(limiter.queued).toBe(4);
    await time.advance(1_000);
    expect(at).toHaveLength(25);
    limiter.close();
  });

  it('tryAcquire takes only a due permit and never jumps the queue', async () => {
    const time = new FakeTime();
    const limiter = new RateLimiter(new Source(4), time);
    expect(limiter.tryAcquire()).toBe(true);
    expect(limiter.tryAcquire()).toBe(false);
    await time.advance(249);
    expect(limiter.tryAcquire()).toBe(false);
    await time.advance(1);
    expect(limiter.tryAcquire()).toBe(true);
    // over one simulated minute of polling every ms, exactly 4 per second pass
    let passed = 0;
    for (let ms = 0; ms < 60_000; ms++) {
      await time.advance(1);
      if (limiter.tryAcquire()) passed++;
    }
    expect(passed).toBe(240);
    const { at } = waitAll(limiter, time, 1);
    expect(limiter.tryAcquire()).toBe(false); // a waiter is queued ahead
    await time.advance(250);
    expect(at).toHaveLength(1);
    limiter.close();
  });

  it('follows the capacity: 0 stops the permits, a rise resumes them at the new spacing at once', async () => {
    const time = new FakeTime();
    const source = new Source(0);
    const limiter = new RateLimiter(source, time, { maxWaitMs: 60_000 });
    const { at } = waitAll(limiter, time, 6);
    await time.advance(5_000);
    expect(at).toEqual([]);
    source.set(2); // one every 500 ms
    await time.advance(1_000);
    expect(at).toEqual([5_000, 5_500, 6_000]);
    source.set(20); // one every 50 ms from the last permit
    await time.advance(100);
    expect(at).toEqual([5_000, 5_500, 6_000, 6_050, 6_100]);
    source.set(0.5); // one every 2 s
    await time.advance(1_999);
    expect(at).toHaveLength(5);
    await time.advance(1);
    expect(at).toHaveLength(6);
    limiter.close();
  });

  it('bounds every wait: timeout, abort signal, queue size, close', async () => {
    const time = new FakeTime();
    const source = new Source(0);
    const limiter = new RateLimiter(source, time, { maxWaitMs: 1_000, maxQueued: 3 });
    const timedOut = waitAll(limiter, time, 2);
    const controller = new AbortController();
    const aborted = waitAll(limiter, time, 1, { signal: controller.signal, timeoutMs: 10_000 });
    const refused = waitAll(limiter, time, 1);
    await time.advance(0);
    expect(refused.errors).toEqual(['LIMITER_QUEUE_FULL']);
    controller.abort();
    await time.advance(0);
    expect(aborted.errors).toEqual(['LIMITER_ABORTED']);
    await time.advance(1_000);
    expect(timedOut.errors).toEqual(['LIMITER_TIMEOUT', 'LIMITER_TIMEOUT']);
    expect(limiter.queued).toBe(0);
    expect(time.pending).toBe(0); // nothing left sleeping: no timer keeps a process alive
    const closed = waitAll(limiter, time, 2, { timeoutMs: 60_000 });
    limiter.close();
    await time.advance(0);
    expect(closed.errors).toEqual(['CLIENT_CLOSED', 'CLIENT_CLOSED']);
    await expect(limiter.wait()).rejects.toMatchObject({ code: 'CLIENT_CLOSED' });
    expect(source.listenerCount('capacity')).toBe(0);
  });
});

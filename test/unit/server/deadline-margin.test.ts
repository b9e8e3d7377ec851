/**
 * The measured deadline margin (server/grpc/deadline-margin.ts): the floor on an idle loop, then at least the
 * event-loop delay a blocked loop caused plus the p99 send delay, capped, and back to the floor once the
 * remembered windows have passed. Real loop delay cannot be faked, so this test blocks the loop for real.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DeadlineMargin } from '../../../src/server/grpc/deadline-margin.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const block = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

let margin: DeadlineMargin | undefined;
afterEach(() => margin?.stop());

describe('DeadlineMargin', () => {
  it('starts at the floor', () => {
    margin = new DeadlineMargin({ floorMs: 3 });
    expect(margin.currentMs()).toBe(3);
  });

  it('rises to the loop delay plus the send delay, and decays after the remembered windows', async () => {
    margin = new DeadlineMargin({ floorMs: 2, windowMs: 60_000, windows: 2 }).start(); // rotated by hand
    await sleep(20);
    block(40); // one timer fires ~40 ms late
    await sleep(20);
    for (let i = 0; i < 100; i++) margin.recordSend(i < 98 ? 1 : 5); // p99 of the send delays: 5 ms
    margin.rotate();
    expect(margin.currentMs()).toBeGreaterThanOrEqual(38 + 5);
    // Empty windows (rotated within one turn of the loop, so no sample): the busy one is remembered for
    // `windows` rotations, then forgotten.
    margin.rotate();
    expect(margin.currentMs()).toBeGreaterThanOrEqual(38 + 5);
    margin.rotate();
    expect(margin.currentMs()).toBe(2);
  });

  it('keeps, for delayed answers, the worst loop delay of the remembered windows, which the p99 passes over', async () => {
    margin = new DeadlineMargin({ floorMs: 2, windowMs: 60_000, windows: 2 }).start(); // rotated by hand
    expect(margin.delayMs()).toBe(2);
    // One 12 ms stall in ~1.5 s of idle loop: under 1 % of the time, which the (time-weighted) p99 may pass over.
    await sleep(750);
    block(12);
    await sleep(750);
    for (let i = 0; i < 100; i++) margin.recordSend(1);
    margin.rotate();
    expect(margin.delayMs()).toBeGreaterThanOrEqual(10 + 1);
    expect(margin.delayMs()).toBeGreaterThanOrEqual(margin.currentMs());
    margin.rotate();
    margin.rotate();
    expect(margin.delayMs()).toBe(2);
  });

  it('never exceeds its cap', async () => {
    margin = new DeadlineMargin({ floorMs: 2, capMs: 10, windowMs: 60_000 }).start();
    await sleep(10);
    block(40);
    await sleep(10);
    margin.rotate();
    expect(margin.currentMs()).toBe(10);
    expect(margin.delayMs()).toBe(10);
  });

  it('keeps a floor (DEADLINE_MARGIN_MS) set above the cap: the cap bounds the measurement, not the setting', () => {
    margin = new DeadlineMargin({ floorMs: 1500, capMs: 1000, windowMs: 60_000 });
    margin.rotate();
    expect(margin.currentMs()).toBe(1500);
  });

  it('stops sampling the loop at rest (no call for its remembered windows) and resumes at the next call, margin kept', async () => {
    margin = new DeadlineMargin({ floorMs: 2, windowMs: 20, windows: 2 }).start();
    expect(margin.measuring).toBe(true);
    await sleep(5);
    block(30);
    await sleep(5);
    margin.rotate();
    const busy = margin.currentMs();
    expect(busy).toBeGreaterThanOrEqual(20);
    // no call: after two windows of 20 ms with nothing asked, sampling and rotation pause
    await vi.waitFor(() => expect(margin!.measuring).toBe(false), { timeout: 5000, interval: 10 });
    const rested = margin.currentMs();
    await sleep(100);
    expect(margin.currentMs()).toBe(rested); // nothing rotates while paused
    expect(margin.forCall()).toBe(rested);
    expect(margin.measuring).toBe(true);
    margin.stop();
    margin.forCall();
    expect(margin.measuring).toBe(false); // stopped for good: a call no longer resumes it
  });
});

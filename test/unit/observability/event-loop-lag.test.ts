/**
 * The event-loop lag gauges show the lag, not their sampling period (once a second): a calm second reads near
 * 0, and a stall that holds a sample back reads as long as it held it (Node's histogram records period + lag;
 * prom-client exported that as it is, so every gauge read about a second).
 */
import { expect, it } from 'vitest';
import { createMetrics, EVENT_LOOP_SAMPLE_MS } from '../../../src/observability/metrics.js';

const gauge = (text: string, stat: string) => Number(new RegExp(`^ratelimit_nodejs_eventloop_lag_${stat}_seconds (\\S+)$`, 'm').exec(text)?.[1]);
/** Real time: the histogram is sampled by a native timer. */
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

it('a calm window reads near 0; a stall longer than the period reads about its length', async () => {
  const { registry } = createMetrics();
  await registry.metrics(); // the window starts now
  // A window records from its second sample on (the first only marks the time).
  await wait(2 * EVENT_LOOP_SAMPLE_MS + 300);
  const calm = await registry.metrics();
  expect(gauge(calm, 'p50')).toBeLessThan(0.2);
  expect(gauge(calm, 'max')).toBeLessThan(0.2);
  await wait(EVENT_LOOP_SAMPLE_MS + 100);
  // Longer than the period: a sample falls due during it and fires at its end.
  const until = performance.now() + EVENT_LOOP_SAMPLE_MS + 100;
  while (performance.now() < until) {
    // the stall
  }
  await wait(300);
  const stalled = await registry.metrics();
  expect(gauge(stalled, 'max')).toBeGreaterThan(0.05);
  expect(gauge(stalled, 'max')).toBeLessThan(1);
  expect(gauge(stalled, 'stddev')).toBeGreaterThanOrEqual(0);
}, 10_000);

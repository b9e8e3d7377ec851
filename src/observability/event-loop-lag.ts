/**
 * The nodejs_eventloop_lag_{min,max,mean,stddev,p50,p90,p99}_seconds gauges of the default metrics, sampled once
 * a period (prom-client samples every 10 ms by default: 100 wake-ups a second, most of what an idle sidecar
 * would spend). Node's delay histogram records the time between two samples, which is the period plus the lag;
 * prom-client exports it as it is, so with a period of a second every gauge would read about a second. These
 * subtract the period, so they show the lag itself, over the samples since the last scrape (as prom-client's).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Registry } from 'prom-client';
import { scrapedGauge } from './metrics-scraped.js';

/** prom-client's own histogram is given this period so that it never samples: its gauges are replaced. */
export const NEVER_MS = 2 ** 31 - 1;

const STATS = ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99'] as const;
const HELP: Record<(typeof STATS)[number], string> = {
  min: 'The smallest event-loop delay since the last scrape, in seconds.',
  max: 'The largest event-loop delay since the last scrape, in seconds.',
  mean: 'The mean event-loop delay since the last scrape, in seconds.',
  stddev: 'The standard deviation of the event-loop delays since the last scrape, in seconds.',
  p50: 'The 50th percentile of the event-loop delays since the last scrape, in seconds.',
  p90: 'The 90th percentile of the event-loop delays since the last scrape, in seconds.',
  p99: 'The 99th percentile of the event-loop delays since the last scrape, in seconds.',
};

/** Replaces prom-client's histogram gauges in `registry` (named with `prefix`) by ones sampled every `periodMs`. */
export function replaceEventLoopLagGauges(registry: Registry, prefix: string, periodMs: number): void {
  const histogram = monitorEventLoopDelay({ resolution: periodMs });
  histogram.enable();
  const periodNs = periodMs * 1e6;
  const lag = (ns: number) => (histogram.count === 0 ? 0 : Math.max(0, ns - periodNs) / 1e9);
  const read: Record<(typeof STATS)[number], () => number> = {
    min: () => lag(histogram.min),
    max: () => lag(histogram.max),
    mean: () => lag(histogram.mean),
    stddev: () => (histogram.count === 0 ? 0 : histogram.stddev / 1e9),
    p50: () => lag(histogram.percentile(50)),
    p90: () => lag(histogram.percentile(90)),
    // The last one a scrape reads: the window starts again after it.
    p99: () => {
      const value = lag(histogram.percentile(99));
      histogram.reset();
      return value;
    },
  };
  for (const stat of STATS) {
    const name = `${prefix}nodejs_eventloop_lag_${stat}_seconds`;
    registry.removeSingleMetric(name);
    scrapedGauge([registry], name, HELP[stat], read[stat]);
  }
}

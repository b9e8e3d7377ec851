/** Metrics whose value another component keeps, read when the metrics are scraped. */
import { Counter, Gauge, type Registry } from 'prom-client';

/** A counter whose total is kept by another component and read at scrape time. */
export function scrapedCounter(registers: Registry[], name: string, help: string, value: () => number): void {
  new Counter({
    name,
    help,
    registers,
    collect() {
      this.reset();
      this.inc(value());
    },
  });
}

/** A gauge read at scrape time. */
export function scrapedGauge(registers: Registry[], name: string, help: string, value: () => number): void {
  new Gauge({
    name,
    help,
    registers,
    collect() {
      this.set(value());
    },
  });
}

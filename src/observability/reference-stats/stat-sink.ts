/** Where the reference's stats go: a statsd client, or the mapping into Prometheus series. */
export interface StatSink {
  /** A counter grew by `value` since the last report. */
  counter(name: string, value: number): void;
  gauge(name: string, value: number): void;
  /** One timing, in milliseconds. */
  timer(name: string, ms: number): void;
}

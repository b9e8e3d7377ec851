/**
 * The exporter seen from the outside: a collector that refuses or does not answer is logged once when it starts
 * failing and once when it takes spans again (with how many were dropped meanwhile), never per span or per batch.
 */
import type { DiagLogger } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import type { TracingOptions } from './tracing-options.js';

export interface TracingLog {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
}

export class WatchedExporter implements SpanExporter {
  private failing = false;
  private dropped = 0;

  constructor(
    private readonly inner: SpanExporter,
    private readonly options: Pick<TracingOptions, 'url' | 'protocol'>,
    private readonly log: TracingLog,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.inner.export(spans, (result) => {
      if (result.code !== ExportResultCode.SUCCESS) {
        this.dropped += spans.length;
        if (!this.failing) {
          this.failing = true;
          this.log.warn('tracing: the collector did not take spans; dropping them until it does (logged once)', {
            collector: this.options.url,
            protocol: this.options.protocol,
            error: result.error?.message,
          });
        }
      } else if (this.failing) {
        this.failing = false;
        this.log.info('tracing: the collector takes spans again', { collector: this.options.url, dropped: this.dropped });
        this.dropped = 0;
      }
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

const QUIET_MS = 60_000;

/** The SDK's diagnostics as log lines: warnings and errors only, at most one a minute. */
export function onceLog(log: TracingLog, now: () => number = Date.now): DiagLogger {
  let last = -Infinity;
  const write = (message: string, ...args: unknown[]) => {
    const t = now();
    if (t - last < QUIET_MS) return;
    last = t;
    log.warn(`tracing: ${message}`, args.length > 0 ? { detail: args.map(String).join(' ') } : undefined);
  };
  const ignore = () => {};
  return { error: write, warn: write, info: ignore, debug: ignore, verbose: ignore };
}

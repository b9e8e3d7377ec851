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
const MAX_KINDS = 32;

/** The text of an SDK diagnostic: an exception comes as its JSON (the global error handler's), keep its message. */
function textOf(message: string): string {
  if (!message.startsWith('{')) return message;
  try {
    const inner = (JSON.parse(message) as { message?: unknown }).message;
    return typeof inner === 'string' ? inner : message;
  } catch {
    return message;
  }
}

/**
 * The SDK's diagnostics as log lines: warnings and errors only, each kind (its text without numbers) at most once
 * a minute, so a collector away or a full queue gives a line, not one per batch.
 */
export function onceLog(log: TracingLog, now: () => number = Date.now): DiagLogger {
  const last = new Map<string, number>();
  const write = (message: string, ...args: unknown[]) => {
    const text = textOf(message);
    const kind = text.replace(/\d+/g, 'N').slice(0, 80);
    const t = now();
    if (t - (last.get(kind) ?? -Infinity) < QUIET_MS) return;
    if (!last.has(kind) && last.size >= MAX_KINDS) last.delete(last.keys().next().value!);
    last.set(kind, t);
    log.warn(`tracing: ${text}`, args.length > 0 ? { detail: args.map(String).join(' ') } : undefined);
  };
  const ignore = () => {};
  return { error: write, warn: write, info: ignore, debug: ignore, verbose: ignore };
}

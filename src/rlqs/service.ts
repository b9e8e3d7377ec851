/**
 * StreamRateLimitQuotas: one call per Envoy (per filter config), open as long as Envoy runs. Each reports
 * message is decoded, bounded and handed to the book; the answer goes back at once on the same stream, and
 * shares the book moves for other Envoys are pushed on theirs.
 *
 * Bounds against a hostile or buggy client: streams per connection (one more is ended RESOURCE_EXHAUSTED),
 * bucket usages reported per stream (a token bucket, so the work per stream is bounded; a message past it is
 * dropped unanswered, its buckets are answered at their next report), buckets and entries per message (a message past them is dropped), the message size (the
 * transport's limit). Every refusal is counted by reason. A dropped message is never answered with an error
 * that ends the stream: Envoy would fall back to its no-assignment behaviour until it reconnects.
 */
import { Code } from '../server/grpc/lean/grpc-wire.js';
import type { BidiCall, BidiHandlers, BidiRoute } from '../server/grpc/bidi/bidi-route.js';
import type { QuotaBook } from './book.js';
import { decodeUsageReports, encodeResponse, type DecodeLimits } from './rlqs-codec.js';

export const REFUSAL_REASONS = ['streams_per_connection', 'report_rate', 'malformed', 'bucket_limit', 'bucket_id_size', 'bucket_id_encoding'] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

export interface RlqsServiceOptions {
  readonly book: QuotaBook;
  readonly nowMs: () => number;
  readonly maxStreamsPerConnection: number;
  /** Bucket usages a stream may report at once, and per second after that (a report past them is dropped). */
  readonly reportBurst: number;
  readonly reportRatePerS: number;
  readonly decode: DecodeLimits;
  readonly onRefused?: (reason: RefusalReason, detail: string) => void;
}

let nextStream = 1;

export interface RlqsRoute {
  readonly route: BidiRoute;
  /** Ends every open stream with OK (shutdown: Envoys reconnect, to another replica if there is one). */
  endAll(): void;
}

export function rlqsRoute(o: RlqsServiceOptions): RlqsRoute {
  const perConnection = new Map<object | string, number>();
  const calls = new Set<BidiCall>();
  const route = (call: BidiCall): BidiHandlers => {
    const open = perConnection.get(call.connection) ?? 0;
    if (open >= o.maxStreamsPerConnection) {
      o.onRefused?.('streams_per_connection', call.peer);
      call.end(Code.RESOURCE_EXHAUSTED, `at most ${o.maxStreamsPerConnection} quota streams per connection`);
      return { message: () => undefined, halfClose: () => undefined, closed: () => undefined };
    }
    perConnection.set(call.connection, open + 1);
    calls.add(call);
    const sub = o.book.open(`${nextStream++}@${call.peer}`, (actions) => call.write(encodeResponse(actions)));
    let tokens = o.reportBurst;
    let refilledAt = o.nowMs();
    let closed = false;
    let pending: Promise<void> = Promise.resolve();
    return {
      message: (bytes) => {
        const now = o.nowMs();
        tokens = Math.min(o.reportBurst, tokens + ((now - refilledAt) * o.reportRatePerS) / 1000);
        refilledAt = now;
        if (tokens < 1) {
          o.onRefused?.('report_rate', call.peer);
          return;
        }
        let reports;
        try {
          reports = decodeUsageReports(bytes, o.decode);
        } catch (err) {
          tokens -= 1;
          o.onRefused?.('malformed', `${call.peer}: ${(err as Error).message}`);
          return;
        }
        // At most a burst of buckets decided per message (the answer's size follows); the rest is dropped.
        if (reports.usages.length > o.reportBurst) {
          o.onRefused?.('report_rate', call.peer);
          reports = { domain: reports.domain, usages: reports.usages.slice(0, o.reportBurst) };
        }
        // Charged per bucket (the work is per bucket); a large report may run the budget into debt.
        tokens -= Math.max(1, reports.usages.length);
        // A bucket id that is not UTF-8 is left unanswered: Envoy would refuse the whole answer and end the stream.
        const unreadable = reports.usages.filter((u) => u.notUtf8 === true);
        if (unreadable.length > 0) {
          o.onRefused?.('bucket_id_encoding', `${call.peer}: ${unreadable.length} bucket id(s) not UTF-8, left unanswered`);
          reports = { domain: reports.domain, usages: reports.usages.filter((u) => u.notUtf8 !== true) };
        }
        const answer = o.book.answer(sub, reports);
        if (Array.isArray(answer)) {
          if (answer.length > 0) call.write(encodeResponse(answer));
          return;
        }
        // Shared shares (BACKEND=redis): answered once the store was read, in the order the reports came.
        const previous = pending;
        pending = Promise.all([answer, previous])
          .then(([a]) => {
            if (!closed && a.length > 0) call.write(encodeResponse(a));
          })
          .catch(() => undefined);
      },
      halfClose: () => call.end(),
      closed: () => {
        if (closed) return;
        closed = true;
        calls.delete(call);
        o.book.close(sub);
        const n = (perConnection.get(call.connection) ?? 1) - 1;
        if (n <= 0) perConnection.delete(call.connection);
        else perConnection.set(call.connection, n);
      },
    };
  };
  return { route, endAll: () => [...calls].forEach((c) => c.end()) };
}

/**
 * The Rate Limit Quota Service, composed: the book over the live rules, the stream route with its bounds,
 * the metrics and the debug view. app/start-service.ts serves `route` at RLQS_PATH on the gRPC port and
 * `describe` at GET /rlqs.
 *
 * The book runs on real (monotonic) time whatever clock the engine is given: Envoy's token buckets refill in
 * real time, and demand is measured between real reports.
 *
 * With BACKEND=redis the book shares every bucket's limit with the other replicas' Envoys through the store's
 * own connection (shared.ts).
 */
import type { CompiledConfig } from '../config/types.js';
import type { RlqsMetrics } from '../observability/metrics-rlqs.js';
import type { BidiRoute } from '../server/grpc/bidi/bidi-route.js';
import type { RedisClient } from '../storage/redis/connection.js';
import { throttledLog } from '../storage/throttled-log.js';
import { systemClock } from '../vocab/clock.js';
import { QuotaBook } from './book.js';
import { bucketRule } from './rules.js';
import { rlqsRoute } from './service.js';
import { redisShareExchange } from './shared.js';
import { startShareSync } from './sync.js';
import { RLQS_PATH } from './rlqs-codec.js';

export { RLQS_PATH };

/** The bounds (docs/rlqs.md); the timings are settings (RLQS_ASSIGNMENT_TTL_S, RLQS_IDLE_ABANDON_S). */
export const RLQS_DEFAULTS = {
  maxBuckets: 50_000,
  maxBucketsPerStream: 5_000,
  maxStreamsPerConnection: 8,
  /** Bucket usages per stream: Envoy reports each of its buckets every 5 s (5,000 buckets: 1,000/s). */
  reportBurst: 10_000,
  reportRatePerS: 2_000,
  /** Bucket ids past these are answered, not tracked. */
  decode: { maxEntries: 16, maxValueBytes: 512 },
  /** Largest report message: 5,000 buckets of ids up to about 800 bytes (whatever the gRPC port's MAX_REQUEST_BYTES). */
  maxReportBytes: 4 * 1024 * 1024,
  /**
   * Answers a client may leave unread (lean transport), as node:http2's stream.bufferSize counts them (twice
   * their size while they wait in the stream: a 3.2 MB answer counted 6.45 MB on Node 24): room for the largest
   * answer, which repeats the report's bucket ids (at most maxReportBytes) with under 64 bytes more for each of
   * at most reportBurst buckets, and 1 MiB beyond.
   */
  maxUnreadBytes: 2 * (4 * 1024 * 1024 + 10_000 * 64 + 1024 * 1024),
} as const;

export interface RlqsSetup {
  readonly path: string;
  readonly route: BidiRoute;
  /** GET /rlqs. */
  describe(): object;
  /** Ends the open streams (shutdown). */
  close(): void;
}

export interface RlqsOptions {
  readonly config: () => CompiledConfig;
  readonly shadowMode: boolean;
  /** Assignment TTL, whole seconds: how long an Envoy keeps its share with the service gone. */
  readonly ttlS: number;
  /** A bucket reported idle this long is abandoned on that Envoy (Envoy reports every bucket every 5 s). */
  readonly idleAbandonS: number;
  readonly metrics: RlqsMetrics;
  /** BACKEND=redis: the store's connection and key prefix, through which replicas share every bucket's limit. */
  readonly redis?: { readonly client: RedisClient; readonly keyPrefix: string };
  readonly nowMs?: () => number;
  readonly log?: (message: string, fields: Record<string, unknown>) => void;
}

export function setUpRlqs(o: RlqsOptions): RlqsSetup {
  const nowMs = o.nowMs ?? (() => performance.now());
  const known = (domain: string) => o.config().domains.has(domain);
  const observer = o.metrics.rlqsObserver(known);
  const exchange =
    o.redis === undefined
      ? undefined
      : redisShareExchange({
          ...o.redis,
          log: throttledLog({ log: (message, error) => o.log?.(message, { error: String(error) }), clock: systemClock, intervalMs: 10_000 }),
        });
  const book = new QuotaBook({
    nowMs,
    ttlS: o.ttlS,
    idleAbandonMs: o.idleAbandonS * 1000,
    maxBuckets: RLQS_DEFAULTS.maxBuckets,
    maxBucketsPerStream: RLQS_DEFAULTS.maxBucketsPerStream,
    rule: (domain, entries) => bucketRule(o.config(), o.shadowMode, domain, entries, systemClock.nowMs()),
    observer,
    ...(exchange === undefined ? {} : { exchange }),
  });
  o.metrics.watchRlqs(() => {
    const out = new Map<string, { buckets: number; streams: number }>();
    for (const [domain, s] of book.stats()) {
      const d = known(domain) ? domain : 'unknown';
      const sum = out.get(d) ?? { buckets: 0, streams: 0 };
      out.set(d, { buckets: sum.buckets + s.buckets, streams: sum.streams + s.streams });
    }
    return out;
  });
  const unreadableLog = throttledLog({ log: (message) => o.log?.(message, { reason: 'bucket_id_encoding' }), clock: systemClock, intervalMs: 60_000 });
  const served = rlqsRoute({
    book,
    nowMs,
    maxStreamsPerConnection: RLQS_DEFAULTS.maxStreamsPerConnection,
    reportBurst: RLQS_DEFAULTS.reportBurst,
    reportRatePerS: RLQS_DEFAULTS.reportRatePerS,
    decode: RLQS_DEFAULTS.decode,
    onRefused: (reason, detail) => {
      observer.refused(reason);
      // Bucket ids Envoy cannot be answered for come back in every report: logged once a minute.
      if (reason === 'bucket_id_encoding') unreadableLog(`quota stream refusal: ${detail}`);
      else if (reason !== 'report_rate') o.log?.('quota stream refusal', { reason, detail });
    },
  });
  const sync = exchange === undefined ? undefined : startShareSync(book, exchange);
  const close = () => {
    sync?.stop();
    served.endAll();
  };
  const route = Object.assign(served.route, { maxMessageBytes: RLQS_DEFAULTS.maxReportBytes, maxUnreadBytes: RLQS_DEFAULTS.maxUnreadBytes });
  return { path: RLQS_PATH, route, describe: () => book.describe(), close };
}

/** The quota book's parts (book.ts): what a bucket's rule asks for, its options, and what it tracks. */
import type { Assignment, BucketAction, BucketUsage } from './rlqs-codec.js';
import type { PeerHolder, ShareExchange } from './shared.js';

/** What a bucket's rule asks for (rules.ts): no limit, nothing, or `perFill` requests every `fillS` seconds. */
export type BucketRule =
  | { readonly kind: 'allow' }
  | { readonly kind: 'deny'; readonly name: string }
  | { readonly kind: 'limit'; readonly name: string; readonly perFill: number; readonly fillS: number; readonly shadow: boolean };

export interface RlqsObserver {
  /** One reports message received. */
  report(domain: string): void;
  assignments(domain: string, kind: Assignment['kind'], n: number): void;
  reported(domain: string, allowed: number, denied: number): void;
  wouldDeny(domain: string, n: number): void;
  /** A bucket answered without being tracked: a bound was reached (`bucket_limit`), or its id is too large (`bucket_id_size`). */
  folded(domain: string, reason: 'bucket_limit' | 'bucket_id_size'): void;
}

export interface BookOptions {
  readonly nowMs: () => number;
  /** Assignment TTL, whole seconds: how long Envoys keep a share when the service is gone. */
  readonly ttlS: number;
  /** A bucket reported idle (no requests) this long is abandoned on that Envoy. */
  readonly idleAbandonMs: number;
  /** Most buckets tracked in all, and per stream; past either, a new bucket is folded (answered, not tracked). */
  readonly maxBuckets: number;
  readonly maxBucketsPerStream: number;
  /** A holder whose bucket was not reported for this long is released (Envoy reports every bucket every 5 s). */
  readonly silentMs?: number;
  readonly rule: (domain: string, entries: BucketUsage['entries']) => BucketRule;
  readonly observer?: RlqsObserver;
  /** The other replicas' holders (BACKEND=redis); without it the book is this replica's alone. */
  readonly exchange?: ShareExchange;
}

export class Holder {
  share = -1;
  demand: number | undefined;
  count = 0;
  /** The last report with requests in it (or the first report). */
  activeAtMs: number;
  /** The last report of the bucket, with requests or not. */
  reportedAtMs: number;
  constructor(public sinceMs: number) {
    this.activeAtMs = sinceMs;
    this.reportedAtMs = sinceMs;
  }
}

export interface Tracked {
  readonly key: string;
  readonly domain: string;
  readonly entries: BucketUsage['entries'];
  rule: Extract<BucketRule, { kind: 'limit' }>;
  readonly holders: Map<Subscriber, Holder>;
  shadowTokens: number;
  shadowAtMs: number;
  /** The other replicas' holders, as last read from the exchange. */
  peers: readonly PeerHolder[];
}

/** One stream: what it holds and how to push it an assignment. */
export class Subscriber {
  domain = '';
  /** The last report message on the stream (undefined: none yet). */
  reportedAtMs: number | undefined;
  readonly buckets = new Map<string, Tracked>();
  constructor(
    readonly id: string,
    readonly push: (actions: BucketAction[]) => void,
  ) {}
}

export const bucketKey = (domain: string, entries: BucketUsage['entries']): string => JSON.stringify([domain, entries.map((e) => [e.key, e.value])]);

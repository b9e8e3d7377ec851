/**
 * The Rate Limit Quota Service's metrics (src/rlqs/), per domain: reported usage, assignments sent by kind,
 * what shadow mode would have denied, refusals by reason, and (read at scrape time) tracked buckets and open
 * streams. A domain without rules is counted as `unknown` (domains come from requests).
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export interface RlqsMetricsObserver {
  report(domain: string): void;
  assignments(domain: string, kind: string, n: number): void;
  reported(domain: string, allowed: number, denied: number): void;
  wouldDeny(domain: string, n: number): void;
  folded(domain: string, reason: string): void;
  refused(reason: string): void;
}

export interface RlqsMetrics {
  /** Counters for the quota service; `known(domain)` says whether a domain has rules (else it is `unknown`). */
  rlqsObserver(known: (domain: string) => boolean): RlqsMetricsObserver;
  /** Exports tracked buckets and open streams per domain, read at scrape time. */
  watchRlqs(stats: () => ReadonlyMap<string, { buckets: number; streams: number }>): void;
}

export function rlqsMetrics(registers: Registry[]): RlqsMetrics {
  const reports = new Counter({
    name: 'ratelimit_rlqs_reports_total',
    help: 'Usage-report messages received on the quota streams, per domain.',
    labelNames: ['domain'] as const,
    registers,
  });
  const reported = new Counter({
    name: 'ratelimit_rlqs_reported_requests_total',
    help: 'Requests Envoys reported on the quota streams, per domain, as they decided them (`allowed` or `denied`).',
    labelNames: ['domain', 'result'] as const,
    registers,
  });
  const sent = new Counter({
    name: 'ratelimit_rlqs_assignments_total',
    help: 'Bucket assignments sent on the quota streams, per domain and kind (token_bucket, allow_all, deny_all, abandon).',
    labelNames: ['domain', 'kind'] as const,
    registers,
  });
  const wouldDeny = new Counter({
    name: 'ratelimit_rlqs_shadow_would_deny_total',
    help: 'Requests admitted under a shadow-mode rule that its global limit would have denied (estimated from the reports).',
    labelNames: ['domain'] as const,
    registers,
  });
  const refused = new Counter({
    name: 'ratelimit_rlqs_refused_total',
    help: 'Quota-stream refusals: streams_per_connection; report_rate, malformed (report dropped); bucket_limit, bucket_id_size (bucket answered, not tracked); bucket_id_encoding (id not UTF-8, left unanswered).',
    labelNames: ['reason'] as const,
    registers,
  });
  return {
    rlqsObserver(known) {
      const d = (domain: string) => (known(domain) ? domain : 'unknown');
      return {
        report: (domain) => reports.inc({ domain: d(domain) }),
        assignments: (domain, kind, n) => sent.inc({ domain: d(domain), kind }, n),
        reported: (domain, allowed, denied) => {
          if (allowed > 0) reported.inc({ domain: d(domain), result: 'allowed' }, allowed);
          if (denied > 0) reported.inc({ domain: d(domain), result: 'denied' }, denied);
        },
        wouldDeny: (domain, n) => wouldDeny.inc({ domain: d(domain) }, n),
        folded: (_domain, reason) => refused.inc({ reason }),
        refused: (reason) => refused.inc({ reason }),
      };
    },
    watchRlqs(stats) {
      const gauge = (name: string, help: string, pick: (s: { buckets: number; streams: number }) => number) =>
        new Gauge({
          name,
          help,
          labelNames: ['domain'] as const,
          registers,
          collect() {
            this.reset();
            for (const [domain, s] of stats()) this.set({ domain }, pick(s));
          },
        });
      gauge('ratelimit_rlqs_buckets', 'Buckets with a global limit tracked by the quota service, per domain.', (s) => s.buckets);
      gauge('ratelimit_rlqs_streams', 'Open quota streams (one per Envoy filter config), per domain.', (s) => s.streams);
    },
  };
}

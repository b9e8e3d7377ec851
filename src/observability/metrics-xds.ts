/** The metrics of the rules over xDS (CONFIG_TYPE=GRPC_XDS_SOTW), read from the client's status at scrape time. */
import { Gauge, type Registry } from 'prom-client';
import { scrapedCounter, scrapedGauge } from './metrics-scraped.js';

export interface XdsMetricsStatus {
  readonly state: string;
  readonly version: string;
  readonly accepted: number;
  readonly refused: number;
  readonly repeatedNacks: number;
  readonly connects: number;
  readonly lastNack?: { readonly version: string };
}

export function xdsMetrics(registers: Registry[], status: () => XdsMetricsStatus): void {
  scrapedGauge(
    registers,
    'ratelimit_xds_connected',
    '1 while the stream to the xDS server is up (CONFIG_TYPE=GRPC_XDS_SOTW), else 0; the rules in force stay in force either way.',
    () => (status().state === 'connected' ? 1 : 0),
  );
  new Gauge({
    name: 'ratelimit_xds_rules_info',
    help: 'Always 1: `version` is the xDS version of the rules in force, `nacked` the version last refused (empty if none).',
    labelNames: ['version', 'nacked'] as const,
    registers,
    collect() {
      const s = status();
      this.reset();
      this.set({ version: s.version, nacked: s.lastNack?.version ?? '' }, 1);
    },
  });
  scrapedCounter(
    registers,
    'ratelimit_xds_sets_accepted_total',
    'xDS responses applied (or identical to the rules in force) and ACKed.',
    () => status().accepted,
  );
  scrapedCounter(
    registers,
    'ratelimit_xds_sets_refused_total',
    'xDS responses refused by validation and NACKed (a repeat of the same refused set counts in ratelimit_xds_repeated_nacks_total instead).',
    () => status().refused,
  );
  scrapedCounter(
    registers,
    'ratelimit_xds_repeated_nacks_total',
    'NACKs of a set already refused, sent again without validating it again.',
    () => status().repeatedNacks,
  );
  scrapedCounter(registers, 'ratelimit_xds_connects_total', 'Connection attempts to the xDS server.', () => status().connects);
}

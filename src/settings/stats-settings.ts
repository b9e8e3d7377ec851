/**
 * The settings of the reference's stats outputs, with envoyproxy/ratelimit's names and meanings: statsd and
 * DogStatsD (USE_STATSD, STATSD_*, USE_DOG_STATSD, USE_DOG_STATSD_MOGRIFIERS, EXTRA_TAGS, STATS_FLUSH_INTERVAL)
 * and the statsd_exporter mapping of its Prometheus export (PROMETHEUS_MAPPER_YAML,
 * PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS). Spread into SETTINGS (settings.ts); docs/metrics-reference.md
 * explains them.
 */
import { bool, parseGoDuration, spec } from './xds-settings.js';

/** `k1:v1,k2:v2` (EXTRA_TAGS, a Go envconfig map): an entry without `:` is an error. */
export function parseTagMap(raw: string): readonly (readonly [string, string])[] {
  if (raw.trim() === '') return [];
  return raw.split(',').map((entry): [string, string] => {
    const colon = entry.indexOf(':');
    if (colon <= 0) throw new Error(`'${entry}' is not key:value`);
    return [entry.slice(0, colon).trim(), entry.slice(colon + 1).trim()];
  });
}

export const STATS_SETTINGS = {
  useStatsd: bool(
    'USE_STATSD',
    false,
    "Send envoyproxy/ratelimit's stats (its names) to a statsd server at STATSD_HOST:STATSD_PORT, every STATS_FLUSH_INTERVAL. Off unless set (the reference's default is on).",
  ),
  statsdHost: spec('STATSD_HOST', 'host', 'localhost', 'USE_STATSD / USE_DOG_STATSD: host of the statsd server or DogStatsD agent.', (s) => s.trim()),
  statsdPort: spec('STATSD_PORT', 'port', 8125, 'USE_STATSD / USE_DOG_STATSD: its port.', (s) => {
    const n = Number(s.trim());
    if (!/^\d+$/.test(s.trim()) || n < 1 || n > 65_535) throw new Error(`'${s}' is not a port (1-65535)`);
    return n;
  }),
  statsdProtocol: spec<'tcp' | 'udp'>('STATSD_PROTOCOL', 'tcp \\| udp', 'tcp', 'USE_STATSD: tcp or udp (DogStatsD is always udp).', (s) => {
    const v = s.trim().toLowerCase();
    if (v !== 'tcp' && v !== 'udp') throw new Error(`'${s}' is not one of tcp, udp`);
    return v;
  }),
  useDogStatsd: bool(
    'USE_DOG_STATSD',
    false,
    'Send the stats to a DogStatsD agent (udp, STATSD_HOST:STATSD_PORT), EXTRA_TAGS as tags, names rewritten by USE_DOG_STATSD_MOGRIFIERS.',
  ),
  useDogStatsdMogrifiers: spec<string[]>(
    'USE_DOG_STATSD_MOGRIFIERS',
    'comma-separated list',
    [],
    'USE_DOG_STATSD: mogrifiers, each from DOG_STATSD_MOGRIFIER_<NAME>_PATTERN, _NAME and _TAGS (the first that matches renames a stat).',
    (s) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== ''),
  ),
  extraTags: spec(
    'EXTRA_TAGS',
    'key:value,...',
    [] as readonly (readonly [string, string])[],
    'Tags added to every statsd stat (in the name for statsd, as tags for DogStatsD).',
    parseTagMap,
  ),
  statsFlushIntervalMs: {
    ...spec('STATS_FLUSH_INTERVAL', 'duration (500ms, 10s, 1m)', 10_000, 'USE_STATSD / USE_DOG_STATSD: how often the counters are sent.', (s) => {
      const ms = parseGoDuration(s);
      if (ms < 100) throw new Error(`'${s}' is shorter than 100ms`);
      return ms;
    }),
    shown: '10s',
  },
  prometheusMapperYaml: spec(
    'PROMETHEUS_MAPPER_YAML',
    'path',
    '',
    "A statsd_exporter mapping file: envoyproxy/ratelimit's stats are exported on /metrics under the names and labels it gives (docs/metrics-reference.md).",
    (s) => s.trim(),
  ),
  disableStats: bool(
    'DISABLE_STATS',
    false,
    "No envoyproxy/ratelimit stats at all, as there: nothing sent to statsd or DogStatsD, no PROMETHEUS_ADDR listener, no series under its names (ratelimit_service_*). This service's own series stay on the HTTP port's /metrics.",
  ),
  prometheusResponseTimeAsMilliseconds: bool(
    'PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS',
    false,
    'USE_PROMETHEUS without PROMETHEUS_MAPPER_YAML: ratelimit_service_response_time_seconds observes milliseconds, not seconds (its older unit).',
  ),
};

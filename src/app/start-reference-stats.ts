/**
 * The reference's stats, when a user of the reference asks for them: a statsd_exporter mapping into our
 * Prometheus series (PROMETHEUS_MAPPER_YAML, or the built-in mapping with USE_PROMETHEUS), and statsd or
 * DogStatsD (USE_STATSD, USE_DOG_STATSD). With none of them on nothing is created and requests pay nothing;
 * DISABLE_STATS=true turns every one of them off, and the mirrors too.
 * A mapping replaces the per-rule mirrors under the reference's names (observability/metrics-reference.ts),
 * since it gives those names itself.
 */
import { readFileSync } from 'node:fs';
import { defaultMappingYaml } from '../observability/reference-stats/default-mapping.js';
import { parseMappingFile } from '../observability/reference-stats/mapping-file.js';
import { PromMappingSink } from '../observability/reference-stats/prom-sink.js';
import { ReferenceStats } from '../observability/reference-stats/reference-stats.js';
import type { StatSink } from '../observability/reference-stats/stat-sink.js';
import { createStatsdSink, readMogrifiers } from '../observability/reference-stats/statsd-sink.js';
import { StartupError } from '../vocab/startup-error.js';
import type { StartContext } from './start-context.js';

const MIRRORS = ['total_hits', 'over_limit', 'near_limit', 'within_limit', 'shadow_mode'].map((s) => `ratelimit_service_rate_limit_${s}`);

export async function startReferenceStats(ctx: StartContext, env: Readonly<Record<string, string | undefined>> = process.env): Promise<void> {
  const { settings, metrics, log, teardown } = ctx;
  if (settings.disableStats) {
    // as the reference's null sink: not one of its stats, not even the per-rule mirrors under its names
    for (const name of MIRRORS) metrics.registry.removeSingleMetric(name);
    return;
  }
  const file = settings.prometheusMapperYaml;
  let live: StatSink | undefined;
  if (file !== '' || settings.usePrometheus) {
    let config;
    try {
      config =
        file !== ''
          ? parseMappingFile(readFileSync(file, 'utf8'), file)
          : parseMappingFile(defaultMappingYaml(settings.prometheusResponseTimeAsMilliseconds), 'built-in mapping');
    } catch (err) {
      throw new StartupError(`PROMETHEUS_MAPPER_YAML: ${(err as Error).message}`);
    }
    for (const ignored of config.ignored) log.info('statsd mapping: key has no effect here', { key: ignored });
    for (const name of MIRRORS) metrics.registry.removeSingleMetric(name);
    live = new PromMappingSink(config, metrics.registry);
  }
  const batched: StatSink[] = [];
  if (settings.useStatsd || settings.useDogStatsd) {
    let mogrifiers;
    try {
      mogrifiers = settings.useDogStatsd ? readMogrifiers(settings.useDogStatsdMogrifiers, env) : [];
    } catch (err) {
      throw new StartupError((err as Error).message);
    }
    const sink = await createStatsdSink({
      host: settings.statsdHost,
      port: settings.statsdPort,
      protocol: settings.useDogStatsd ? 'udp' : settings.statsdProtocol,
      dogStatsd: settings.useDogStatsd,
      mogrifiers,
      onError: (message) => log.warn('stats not sent; retrying quietly', { error: message }),
    });
    batched.push(sink);
    teardown.defer('statsd', () => sink.close());
  }
  if (live === undefined && batched.length === 0) return;
  const stats = new ReferenceStats(live, batched, { extraTags: settings.extraTags, maxKeys: Math.max(1000, settings.metricsMaxDetailedSeries * 10) });
  metrics.useReference(stats);
  if (batched.length > 0) {
    const timer = setInterval(() => stats.flush(), settings.statsFlushIntervalMs);
    timer.unref();
    teardown.defer('stats flush', () => {
      clearInterval(timer);
      stats.flush();
    });
  }
}

/**
 * PROMETHEUS_MAPPER_YAML's mapping against the real statsd_exporter (v0.31.0): the same statsd lines, sent to
 * the exporter over UDP and handed to our mapping, give the same Prometheus series (names, labels, values),
 * for Envoy Gateway's statsd_conf.yaml and the reference's example mapping (test/fixtures/statsd-mapping/), and
 * for our built-in mapping against the reference's default one.
 * The lines are the stats the reference sends (its names: per-rule stats one to four keys deep, call errors,
 * per-method requests and response times, config loads, runtime gauges, an EXTRA_TAGS-tagged stat).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultMappingYaml } from '../../../src/observability/reference-stats/default-mapping.js';
import { parseMappingFile } from '../../../src/observability/reference-stats/mapping-file.js';
import { PromMappingSink } from '../../../src/observability/reference-stats/prom-sink.js';
import { eventually } from '../../support/eventually.js';
import { only, parseSeries, startStatsdExporter, type Series, type StatsdExporter } from '../../support/statsd-exporter.js';

const FIXTURES = join(import.meta.dirname, '../../fixtures/statsd-mapping');
const EG_KEY1 = 'httproute/default/http-ratelimit/rule/0/match/0/ratelimit_example_httproute/default/http-ratelimit/rule/0/match/0/ratelimit_example';
const RULE_STATS = ['total_hits', 'over_limit', 'near_limit', 'within_limit', 'shadow_mode'];
const KEYS = ['edge.generic_key_api', `default/eg/http.${EG_KEY1}.rule-0-match-0_rule-0-match-0`, 'edge.a_1.b_2.c_3', 'edge.remote_address_10_0_0_1'];

const LINES = [
  ...KEYS.flatMap((key, i) => RULE_STATS.map((stat, j) => `ratelimit.service.rate_limit.${key}.${stat}:${i + j + 1}|c`)),
  'ratelimit.service.rate_limit.edge.generic_key_api.total_hits:4|c', // a second flush adds up
  'ratelimit.service.rate_limit.nowhere.domain_not_found:1|c',
  'ratelimit.service.call.should_rate_limit.redis_error:1|c',
  'ratelimit.service.call.should_rate_limit.service_error:2|c',
  'ratelimit_server.ShouldRateLimit.total_requests:7|c',
  'ratelimit_server.Check.total_requests:1|c',
  ...[0, 1, 3, 12, 250, 4000].map((ms) => `ratelimit_server.ShouldRateLimit.response_time:${ms}|ms`),
  'ratelimit.service.config_load_success:1|c',
  'ratelimit.service.config_load_error:1|c',
  'ratelimit.service.global_shadow_mode:1|c',
  'ratelimit.go.numGoroutines:12|g',
  'ratelimit.redis_pool.cx_active:3|g',
  'ratelimit.service.rate_limit.edge.generic_key_api.total_hits.__env=prod:1|c',
];

/** What the exporter's line parser makes of a line, handed to our mapping (a `|ms` value arrives in seconds there). */
function feed(sink: PromMappingSink, line: string): void {
  const m = /^(.+):([\d.]+)\|(c|g|ms)$/.exec(line)!;
  const [name, value, type] = [m[1]!, Number(m[2]), m[3]!];
  if (type === 'c') sink.counter(name, value);
  else if (type === 'g') sink.gauge(name, value);
  else sink.timer(name, value / 1000);
}

const exporterOwn = (name: string) => /^(go|process|promhttp|statsd_exporter|statsd_metric_mapper)_/.test(name);

const fixture = (file: string) => () => readFileSync(join(FIXTURES, file), 'utf8');
describe.each([
  ['envoy-gateway-statsd_conf.yaml', fixture('envoy-gateway-statsd_conf.yaml')],
  ['reference-example-conf.yaml', fixture('reference-example-conf.yaml')],
  // The built-in mapping (USE_PROMETHEUS without a file) against the reference's own default mapping.
  ['reference-default_mapper.yaml', () => defaultMappingYaml(false)],
])('%s: our mapping and statsd_exporter v0.31.0 give the same series', (file, ourMapping) => {
  let exporter: StatsdExporter;
  beforeAll(async () => {
    exporter = await startStatsdExporter(join(FIXTURES, file));
  }, 60_000);
  afterAll(async () => exporter?.stop());

  it('for the same statsd lines', async () => {
    const registry = new Registry();
    const sink = new PromMappingSink(parseMappingFile(ourMapping(), file), registry);
    for (const line of LINES) feed(sink, line);
    const ours = only(parseSeries(await registry.metrics()), (n) => !exporterOwn(n));

    await exporter.sendUdp(LINES);
    const lastLine = 'ratelimit.service.config_load_error';
    let theirs: Series = new Map();
    await eventually(
      async () => {
        theirs = only(await exporter.series(), (n) => !exporterOwn(n));
        // UDP in order from one socket: the last line's series says all have been read
        return !file.startsWith('reference-example')
          ? theirs.has('ratelimit_service_config_load_error')
          : [...theirs.keys()].some((k) => k.startsWith(lastLine.replaceAll('.', '_')));
      },
      { timeoutMs: 10_000, what: 'the exporter to read every line' },
    );
    expect(ours.size).toBeGreaterThan(10);
    expect(Object.fromEntries([...ours].sort())).toEqual(Object.fromEntries([...theirs].sort()));
  });
});

/** The statsd_exporter mapping file: what a wrong file is told, and the built-in mapping's response-time unit. */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { defaultMappingYaml } from '../../../src/observability/reference-stats/default-mapping.js';
import { parseMappingFile } from '../../../src/observability/reference-stats/mapping-file.js';
import { PromMappingSink } from '../../../src/observability/reference-stats/prom-sink.js';
import { parseSeries } from '../../support/statsd-exporter.js';

describe('a mapping file that cannot be used', () => {
  it.each([
    ['mappings:\n  - match: "a.*"\n    name: "bad name"\n', 'conf.yaml:3: mappings[0].name'],
    ['mappings:\n  - match: "a.*"\n    name: x\n    labels: { "9x": "$1" }\n', "conf.yaml:4: mappings[0].labels: '9x' is not a label name"],
    ['mappings:\n  - match: "a..b"\n    name: x\n', "conf.yaml:2: mappings[0].match 'a..b' is not a glob"],
    ['mappings:\n  - match: "a(("\n    match_type: regex\n    name: x\n', 'conf.yaml:2: mappings[0].match: invalid regex'],
    ['mappings:\n  - match: "a.*"\n    name: x\n    observer_typ: histogram\n', "conf.yaml:4: mappings[0]: unknown key 'observer_typ'"],
    ['mappings:\n  - match: "a.*"\n    name: x\n    timer_type: histogramm\n', 'conf.yaml:4: mappings[0].timer_type must be one of histogram, summary'],
    ['mappings:\n  - name: x\n', 'conf.yaml:2: mappings[0]: no `match`'],
  ])('%j: %s', (text, message) => {
    expect(() => parseMappingFile(text, 'conf.yaml')).toThrow(message);
  });

  it('lists the keys that change nothing here, with their line', () => {
    const config = parseMappingFile('defaults:\n  ttl: 1m\nmappings:\n  - match: "a.*"\n    name: x\n    honor_labels: true\n', 'conf.yaml');
    expect(config.ignored).toEqual(['conf.yaml:2: defaults.ttl', 'conf.yaml:6: mappings[0].honor_labels']);
  });
});

describe('a regex mapping puts in its groups as Go does', () => {
  it('$1, ${1}x, $$ and a named group; a missing group is empty', async () => {
    const registry = new Registry();
    const text =
      'mappings:\n  - match: "^a\\\\.(?P<svc>[^.]+)\\\\.(\\\\w+)$"\n    match_type: regex\n    name: "a_${2}x"\n    labels: { svc: "$svc", first: "$1", none: "$9", cost: "$$1" }\n';
    new PromMappingSink(parseMappingFile(text, 'conf.yaml'), registry).counter('a.web.hits', 2);
    expect([...parseSeries(await registry.metrics())].filter(([k]) => k.startsWith('a_'))).toEqual([['a_hitsx{cost="$1",first="web",none="",svc="web"}', 2]]);
  });
});

describe('PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS (the built-in mapping)', () => {
  it.each([
    [false, 0.25],
    [true, 250],
  ])('%s: a 250 ms call is observed as %s', async (ms, observed) => {
    const registry = new Registry();
    new PromMappingSink(parseMappingFile(defaultMappingYaml(ms), 'built-in'), registry).timer('ratelimit_server.ShouldRateLimit.response_time', 250);
    expect(parseSeries(await registry.metrics()).get('ratelimit_service_response_time_seconds_sum{grpc_method="ShouldRateLimit"}')).toBe(observed);
  });
});

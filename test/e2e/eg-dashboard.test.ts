/**
 * Envoy Gateway's stock rate-limit dashboard (charts/gateway-addons-helm/dashboards/global-ratelimit.json, a
 * copy in test/fixtures/statsd-mapping/) has data on every panel but Go's runtime one: the service is started as
 * Envoy Gateway starts the reference (USE_STATSD=false, USE_PROMETHEUS=true, PROMETHEUS_ADDR,
 * PROMETHEUS_MAPPER_YAML with its statsd_conf.yaml) with the rule its example HTTPRoute makes, sent traffic past
 * the limit, and every metric name and label matcher of every query is found on PROMETHEUS_ADDR's /metrics.
 *
 * In a cluster, Prometheus adds the pod's labels to every series it scrapes (its kubernetes_sd discovery and a
 * `labelmap` of `__meta_kubernetes_pod_label_(.+)`), so the rate-limit pod's `app.kubernetes.io/component:
 * ratelimit` arrives as `app_kubernetes_io_component="ratelimit"`: the test adds that target label to every
 * scraped series, as that scrape config does, before matching.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';
import { parseSeries } from '../support/statsd-exporter.js';

const FIXTURES = join(import.meta.dirname, '../fixtures/statsd-mapping');
const DASHBOARD = JSON.parse(readFileSync(join(FIXTURES, 'envoy-gateway-global-ratelimit.json'), 'utf8')) as Dashboard;
const TARGET_LABELS = { app_kubernetes_io_component: 'ratelimit' };
const ROUTE = 'httproute/default/http-ratelimit/rule/0/match/0/ratelimit_example';
const RULES = `domain: default/eg/http
descriptors:
  - key: ${ROUTE}
    value: ${ROUTE}
    descriptors:
      - key: rule-0-match-0
        value: rule-0-match-0
        rate_limit: { unit: hour, requests_per_unit: 10 }
`;

interface Panel {
  title?: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}
interface Dashboard {
  panels: Panel[];
  templating: { list: { name: string; current?: { value?: string | string[] } }[] };
}

/** Every `metric{matchers}` of a PromQL expression, template variables put in from the dashboard's current values. */
function selectors(expr: string, vars: Map<string, string>): { name: string; matchers: [string, string][] }[] {
  const filled = expr.replace(/\$(\w+)/g, (all, v: string) => vars.get(v) ?? all);
  const out: { name: string; matchers: [string, string][] }[] = [];
  for (const m of filled.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?/g)) {
    if (/^\d/.test(m[1]!) || ['by', 'without', 'sum', 'rate', 'irate', 'increase', 'avg', 'max', 'min'].includes(m[1]!)) continue;
    const matchers = [...(m[2] ?? '').matchAll(/(\w+)\s*=\s*"([^"]*)"/g)].map((x): [string, string] => [x[1]!, x[2]!]);
    out.push({ name: m[1]!, matchers });
  }
  return out;
}

function panels(list: Panel[]): Panel[] {
  return list.flatMap((p) => [p, ...panels(p.panels ?? [])]);
}

let svc: ServiceProcess;
let prom: number;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'eg-dashboard-'));
  writeFileSync(join(dir, 'eg.yaml'), RULES);
  prom = await freePort();
  svc = await spawnService({
    CONFIG_DIR: dir,
    USE_STATSD: 'false',
    USE_PROMETHEUS: 'true',
    PROMETHEUS_ADDR: `127.0.0.1:${prom}`,
    PROMETHEUS_MAPPER_YAML: join(FIXTURES, 'envoy-gateway-statsd_conf.yaml'),
  });
}, 30_000);

afterAll(async () => {
  await svc?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

it('finds every metric and label matcher of every non-Go panel on /metrics after traffic past the limit', async () => {
  const client = new RlsTestClient(svc.grpcAddress);
  try {
    for (let i = 0; i < 12; i++)
      await client.ask(
        'default/eg/http',
        [
          [
            [ROUTE, ROUTE],
            ['rule-0-match-0', 'rule-0-match-0'],
          ],
        ],
        1,
      );
  } finally {
    client.close();
  }
  const text = await (await fetch(`http://127.0.0.1:${prom}/metrics`)).text();
  const scraped = [...parseSeries(text)].map(([key, value]) => {
    const name = key.replace(/\{.*$/, '');
    const labels = new Map([...key.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1]!, l[2]!]));
    for (const [k, v] of Object.entries(TARGET_LABELS)) labels.set(k, v);
    return { name, labels, value };
  });
  const vars = new Map(DASHBOARD.templating.list.map((v) => [v.name, [v.current?.value ?? ''].flat().join(',')]));
  const queried = panels(DASHBOARD.panels).flatMap((p) =>
    (p.targets ?? []).flatMap((t) => selectors(t.expr ?? '', vars).map((s) => ({ panel: p.title, ...s }))),
  );
  const goRuntime = queried.filter((q) => q.name.startsWith('go_'));
  const rest = queried.filter((q) => !q.name.startsWith('go_'));
  expect(goRuntime.map((q) => q.panel)).toEqual(['CPU Fraction']); // the one Go runtime panel (docs/metrics-reference.md says what stands for it)
  expect(rest.length).toBeGreaterThanOrEqual(5);
  const missing = rest.filter((q) => !scraped.some((s) => s.name === q.name && s.value > 0 && q.matchers.every(([k, v]) => s.labels.get(k) === v)));
  expect(missing).toEqual([]);
  // What stands for the Go runtime panel: the GC's time, from Node.js's own GC metrics. Its series appears with the
  // process's first collection, which a short run may not have reached: scrapes (each allocates) until it has,
  // bounded by count and time.
  const gcSeries = /^ratelimit_nodejs_gc_duration_seconds_count\{/m;
  let gcText = text;
  const until = Date.now() + 15_000;
  for (let i = 0; !gcSeries.test(gcText) && i < 2_000 && Date.now() < until; i++) gcText = await (await fetch(`http://127.0.0.1:${prom}/metrics`)).text();
  expect(gcSeries.test(gcText), 'no garbage collection recorded in ratelimit_nodejs_gc_duration_seconds').toBe(true);
}, 30_000);

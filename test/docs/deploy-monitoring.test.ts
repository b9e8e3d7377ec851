/**
 * The Grafana dashboard and the Prometheus alert rules under deploy/k8s/monitoring use only metrics (and
 * labels) that src/observability/metrics.ts declares: a renamed metric breaks this test, not a dashboard nobody looks at.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { everyMetric } from '../../scripts/docs-tables.js';

const DIR = join(import.meta.dirname, '../../deploy/k8s/monitoring');
/** name → label names, for every series name the service exports (histograms with their suffixes). */
let exported: Map<string, Set<string>>;

beforeAll(async () => {
  const metrics = everyMetric({ defaultMetrics: true });
  exported = new Map();
  for (const m of await metrics.registry.getMetricsAsJSON()) {
    const labels = new Set([
      'pod',
      'namespace',
      'instance',
      'job',
      ...((metrics.registry.getSingleMetric(m.name) as unknown as { labelNames?: string[] }).labelNames ?? []),
    ]);
    const names = String(m.type) === 'histogram' ? ['_bucket', '_sum', '_count'].map((s) => m.name + s) : [m.name];
    for (const n of names) exported.set(n, String(m.type) === 'histogram' && n.endsWith('_bucket') ? new Set([...labels, 'le']) : labels);
  }
});

function alertExpressions(): string[] {
  const rule = parse(readFileSync(join(DIR, 'prometheus-rule.yaml'), 'utf8')) as { spec: { groups: { rules: { alert: string; expr: string }[] }[] } };
  return rule.spec.groups.flatMap((g) => g.rules.map((r) => r.expr));
}

function dashboardExpressions(): string[] {
  const d = JSON.parse(readFileSync(join(DIR, 'ratelimit-dashboard.json'), 'utf8')) as {
    panels: { targets: { expr: string }[] }[];
    templating: { list: { definition?: string }[] };
  };
  return [...d.panels.flatMap((p) => p.targets.map((t) => t.expr)), ...d.templating.list.flatMap((v) => (v.definition ? [v.definition] : []))];
}

/** Every `ratelimit_*` series used, with the label names of its selector (`name{a="x",b!~"y"}`). */
function uses(expr: string): { name: string; labels: string[] }[] {
  return [...expr.matchAll(/\b(ratelimit_[a-z0-9_]+)(\{([^}]*)\})?/g)].map((m) => ({
    name: m[1]!,
    labels: [...(m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)/g)].map((l) => l[1]!),
  }));
}

function unknownUses(exprs: string[]): string[] {
  const problems: string[] = [];
  for (const expr of exprs) {
    for (const u of uses(expr)) {
      const labels = exported.get(u.name);
      if (labels === undefined) problems.push(`${u.name} is not exported (in: ${expr})`);
      else for (const l of u.labels) if (!labels.has(l)) problems.push(`${u.name} has no label ${l}`);
    }
  }
  return problems;
}

describe('deploy/k8s/monitoring', () => {
  it('alert rules use only exported metrics and labels', () => {
    const exprs = alertExpressions();
    expect(exprs.length).toBeGreaterThan(5);
    expect(unknownUses(exprs)).toEqual([]);
  });

  it('dashboard panels use only exported metrics and labels', () => {
    const exprs = dashboardExpressions();
    expect(exprs.length).toBeGreaterThan(10);
    expect(unknownUses(exprs)).toEqual([]);
  });

  it('notices a metric that does not exist (so the checks above can fail)', () => {
    expect(unknownUses(['sum(rate(ratelimit_total_hits[5m]))', 'ratelimit_decisions_total{plan="x"}'])).toEqual([
      expect.stringContaining('ratelimit_total_hits is not exported'),
      'ratelimit_decisions_total has no label plan',
    ]);
  });

  it('covers the metrics an operator needs: store health, fallbacks, reload failures, errors, latency, folding', () => {
    const used = new Set([...alertExpressions(), ...dashboardExpressions()].flatMap((e) => uses(e).map((u) => u.name)));
    for (const m of [
      'ratelimit_store_ready',
      'ratelimit_store_fallbacks_total',
      'ratelimit_config_last_reload_success',
      'ratelimit_config_version_info',
      'ratelimit_grpc_errors_total',
      'ratelimit_decision_duration_seconds_bucket',
      'ratelimit_detailed_series_folded_total',
      'ratelimit_decisions_total',
      'ratelimit_over_limit_total',
      'ratelimit_build_info',
    ]) {
      expect(used, m).toContain(m);
    }
  });
});

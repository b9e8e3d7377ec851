/**
 * docs/tracing.md's Envoy config pastes as-is: a real Envoy validates it (`envoy --mode validate`), and its
 * settings table names only settings the service declares.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { SETTINGS } from '../../src/settings/settings.js';
import { describeEnvoy, validateEnvoyConfig } from '../support/envoy.js';

const PAGE = readFileSync(join(import.meta.dirname, '../../docs/tracing.md'), 'utf8');

it('names only declared settings', () => {
  const declared = new Set(Object.values(SETTINGS).map((s) => s.env));
  const named = new Set([...PAGE.matchAll(/`((?:TRACING|OTEL)_[A-Z_]+)/g)].map((m) => m[1]!));
  const readByExporter = new Set(['OTEL_EXPORTER_OTLP_CERTIFICATE']);
  expect([...named].filter((n) => !declared.has(n) && !readByExporter.has(n))).toEqual([]);
});

describeEnvoy('docs/tracing.md', () => {
  it("Envoy's config validates", () => {
    const block = [...PAGE.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes('envoy.tracers.opentelemetry'));
    expect(block).toBeDefined();
    const dir = mkdtempSync(join(tmpdir(), 'rl-docs-tracing-'));
    try {
      const file = join(dir, 'tracing-envoy.yaml');
      writeFileSync(file, block!);
      const { ok, output } = validateEnvoyConfig(file);
      expect(ok, output).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

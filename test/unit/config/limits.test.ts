/**
 * Limits and safety: no rules file can make a load hang or run out of memory. Every limit that is
 * hit is one ConfigError with file:line:col, found in bounded time (these tests time out, not hang, on old code).
 */
import { describe, expect, it } from 'vitest';
import { compileConfigFiles } from '../../../src/config/index.js';
import type { ConfigLimits } from '../../../src/config/index.js';
import { cpuMs } from '../../support/cpu-time.js';
import { fixtureText } from './support.js';

function errorsOf(text: string, limits?: Partial<ConfigLimits>, name = 'f.yaml'): string[] {
  const result = compileConfigFiles([{ name, text }], { mergeDomains: false, ...(limits ? { limits } : {}) });
  return result.ok ? [] : result.errors.map(String);
}

const RULE = '    rate_limit: {unit: second, requests_per_unit: 1}\n';

describe('alias expansion is bounded', () => {
  it('rejects the ten-line alias bomb in metadata, quickly, at the alias that crosses the budget', () => {
    const started = cpuMs();
    const errors = errorsOf(fixtureText('limits/alias-bomb.yaml'), undefined, 'alias-bomb.yaml');
    expect(errors).toEqual(["alias-bomb.yaml:7:14: aliases expand to more than 1000000 nodes (alias '*a'); is this an alias bomb?"]);
    // CPU time, not wall time: the bound is on the work done (unbounded expansion takes minutes), and a busy
    // machine stretches wall time several-fold.
    expect(cpuMs() - started).toBeLessThan(2000);
  }, 10_000);

  it('rejects a bomb through merge keys too', () => {
    let text = 'domain: d\ndescriptors:\n  - key: a0\n    rate_limit: &m0 {unit: second, requests_per_unit: 1}\n';
    for (let i = 1; i <= 9; i++) {
      text += `  - key: a${i}\n    rate_limit: &m${i}\n      <<: [${Array.from({ length: 10 }, () => `*m${i - 1}`).join(', ')}]\n`;
    }
    const errors = errorsOf(text);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^f\.yaml:\d+:\d+: aliases expand to more than 1000000 nodes \(alias '\*m\d'\); is this an alias bomb\?$/);
  }, 10_000);

  it('resolves many aliases in linear time (the YAML library scans the whole document per alias)', () => {
    const file = (ref: string): string => {
      let text = 'domain: d\ndescriptors:\n  - key: base\n    rate_limit: &r {unit: second, requests_per_unit: 1}\n';
      for (let i = 0; i < 10_000; i++) text += `  - {key: k${i}, rate_limit: ${ref}}\n`;
      return text;
    };
    const timed = (text: string): number => {
      const started = cpuMs();
      expect(compileConfigFiles([{ name: 'f.yaml', text }], { mergeDomains: false }).ok).toBe(true);
      return cpuMs() - started;
    };
    // Same size and shape, once with 10 000 aliases and once with the mapping written out each time.
    const inline = timed(file('{unit: second, requests_per_unit: 1}'));
    const aliased = timed(file('*r'));
    expect(aliased).toBeLessThan(3 * inline + 500);
  }, 60_000);

  it('keeps legitimate anchors working and names an alias inside its own anchor as unknown', () => {
    expect(errorsOf(`domain: d\ndescriptors:\n  - key: a\n${RULE}    metadata: &m {x: [1, 2], w: {z: 3}}\n  - key: b\n${RULE}    metadata: *m\n`)).toEqual([]);
    expect(errorsOf(`domain: d\ndescriptors: &l\n  - key: a\n    descriptors: *l\n`)).toEqual([
      "f.yaml:4:18: unknown alias '*l': no anchor '&l' completed before it",
    ]);
  });
});

describe('size and nesting are bounded', () => {
  it('refuses a file larger than maxFileBytes, naming the setting', () => {
    const text = `domain: d\n# ${'x'.repeat(2000)}\n`;
    expect(errorsOf(text, { maxFileBytes: 1000 })).toEqual([
      `f.yaml:1:1: file is ${Buffer.byteLength(text)} bytes, more than the limit of 1000 (CONFIG_MAX_FILE_BYTES)`,
    ]);
  });

  it('refuses YAML nested deeper than maxYamlDepth', () => {
    const text = `domain: d\ndescriptors:\n  - key: k\n${RULE}    metadata: {a: ${'['.repeat(300)}${']'.repeat(300)}}\n`;
    expect(errorsOf(text)).toEqual(['f.yaml:5:271: mappings and lists nested more than 256 levels deep']);
  });

  it('refuses descriptors nested deeper than maxDescriptorDepth', () => {
    let text = 'domain: d\ndescriptors:\n';
    for (let i = 0; i < 34; i++) text += `${'  '.repeat(2 * i)}  - key: k${i}\n${'  '.repeat(2 * i)}    descriptors:\n`;
    const errors = errorsOf(text);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^f\.yaml:\d+:\d+: descriptors(\[0\]\.descriptors){32}: descriptors nested more than 32 levels deep$/);
  });

  it('refuses a domain with more than maxDescriptorsPerDomain descriptors, once, at the first one too many', () => {
    let text = 'domain: d\ndescriptors:\n';
    for (let i = 0; i < 12; i++) text += `  - {key: k${i}, rate_limit: {unit: second, requests_per_unit: 1}}\n`;
    expect(errorsOf(text, { maxDescriptorsPerDomain: 10 })).toEqual(["f.yaml:13:5: descriptors[10]: domain 'd' has more than 10 descriptors"]);
    expect(errorsOf(text, { maxDescriptorsPerDomain: 12 })).toEqual([]);
  });
});

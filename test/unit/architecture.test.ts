/**
 * The layering of style.md #1, checked: one folder per role, imports pointing one way
 * (server → core → algorithms / storage / config), a protocol-free core, and no import cycles.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname, '../../src');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** module (relative to src, without extension) → its imports: relative ones resolved, packages as named. */
const graph = new Map<string, string[]>();
for (const file of files(SRC)) {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/^(?:import|export)\s[^'"]*?from\s+'([^']+)'/gm)].map((m) => m[1]!);
  const id = relative(SRC, file).replace(/\.ts$/, '');
  graph.set(id, specs.map((s) => (s.startsWith('.') ? relative(SRC, resolve(dirname(file), s)).replace(/\.js$/, '') : s)));
}

/** The room a module lives in; a file in the src/ root (an entry point) is in none. */
const layer = (id: string) => (id.includes('/') ? id.split('/')[0]! : '');

describe('architecture', () => {
  it('keeps the core (and the ext_authz room above it) protocol-free: no gRPC, Redis, YAML, Prometheus or file system', () => {
    for (const [id, deps] of graph) {
      if (layer(id) !== 'core' && layer(id) !== 'authz') continue;
      for (const d of deps) expect(d, `${id} imports ${d}`).not.toMatch(/^(@grpc|ioredis|yaml|prom-client|node:fs)/);
    }
  });

  it('points imports one way: server → core → algorithms / storage / config, and never back up', () => {
    const allowed: Record<string, string[]> = {
      algorithms: ['algorithms'],
      config: ['config', 'core', 'algorithms', 'throttling'],
      storage: ['storage', 'core', 'algorithms', 'throttling'],
      core: ['core', 'algorithms', 'storage', 'config', 'throttling'],
      // A room beside the engine (style.md #16): its vocabulary is read by config and storage, its seam by core.
      throttling: ['throttling', 'core', 'algorithms', 'storage', 'config'],
      authz: ['authz', 'core', 'config'],
      // The protobuf wire format, read and written for every codec: only the vocabulary below it.
      protobuf: ['protobuf', 'core'],
      server: ['server', 'authz', 'core', 'config', 'protobuf'],
      // Logs and metrics name what core, config and the gRPC guard decide; nothing below imports them back.
      observability: ['observability', 'core', 'config', 'server'],
      settings: ['settings', 'core', 'compat', 'observability'],
      compat: ['compat', 'core'],
      cli: ['cli', 'server'],
      // The xDS client: protobuf by hand and the ADS stream; the composition hands it the compiler.
      xds: ['xds', 'protobuf'],
      // The Rate Limit Quota Service: its stream route plugs into the gRPC port, its rules are the domains' rules.
      rlqs: ['rlqs', 'server', 'core', 'config', 'observability', 'storage', 'protobuf'],
      // app/ is the composition: it may import every room, and only the entry point (src/cli.ts) imports it.
    };
    for (const [id, deps] of graph) {
      const rules = allowed[layer(id)];
      if (!rules) continue; // the composition (app/, the entry point cli.ts) and the capacity service's setup may import anything
      for (const d of deps.filter((x) => !x.startsWith('node:') && graph.has(x))) {
        expect(rules, `${id} imports ${d}`).toContain(layer(d));
      }
    }
  });

  it('keeps the src/ root to its entry points: every other module lives in a room', () => {
    const loose = [...graph.keys()].filter((id) => !id.includes('/'));
    expect(loose.length, `loose files in src/: ${loose.join(', ')}`).toBeLessThanOrEqual(2);
    for (const [id, deps] of graph) {
      if (layer(id) === 'app' || !id.includes('/')) continue;
      for (const d of deps.filter((x) => layer(x) === 'app')) expect(id === 'capacity/setup' && d === 'app/startup-error', `${id} imports ${d}`).toBe(true);
    }
  });

  it('has no import cycles', () => {
    const state = new Map<string, 'visiting' | 'done'>();
    const visit = (id: string, path: string[]): void => {
      if (state.get(id) === 'done') return;
      if (state.get(id) === 'visiting') throw new Error(`import cycle: ${[...path, id].join(' → ')}`);
      state.set(id, 'visiting');
      for (const d of graph.get(id) ?? []) if (graph.has(d)) visit(d, [...path, id]);
      state.set(id, 'done');
    };
    for (const id of graph.keys()) visit(id, []);
    expect(state.size).toBe(graph.size);
  });
});

/**
 * The rooms of src/ and the one direction of their imports. LAYERS lists every room once, from the bottom up: a
 * module may import its own room and the rooms on lower lines, never a room on its own line or above. Imports
 * are read with the TypeScript compiler: `import` and `export … from` (type-only ones too), `import()` (a lazy
 * load is an arrow all the same), `import('…')` types, and `new URL('…', import.meta.url)` (a worker or a script
 * read from another room). A strict order leaves no cycle between rooms; the last test finds cycles between
 * modules, within a room included.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/** The src/ root, where only entry points live. */
const ENTRY = '(src root)';

const LAYERS: readonly (readonly string[])[] = [
  // The words every room speaks: requests, descriptors, decisions, bytes, clock, errors, keys, algorithm names.
  ['vocab'],
  // The rate-limit algorithms, pure functions of state and time; the protobuf wire format every codec reads and
  // writes through (each message's codec lives in its own room above).
  ['algorithms', 'protobuf'],
  // Rule files into compiled rules; counters in memory or Redis. Neither knows the other.
  ['config', 'storage'],
  // Adaptive throttling's plans and reports over compiled limits and store checks; the cost estimator and the
  // settlement arithmetic of admission by predicted cost.
  ['throttling', 'cost'],
  // The engine: resolve descriptors to rules, decide, build the answer.
  ['core'],
  // ext_authz decisions over the engine; leases over the stores; the top limited keys the engine reports.
  ['authz', 'lease', 'top'],
  // The gRPC and admin HTTP ports, transports and codecs.
  ['server'],
  // Logs and metrics name what the engine, the rules and the connection guard decide; envoyproxy/ratelimit's names.
  ['observability', 'compat'],
  // The services and clients beside the rate-limit service, each composed by app/; the settings.
  ['rlqs', 'capacity', 'capacity-client', 'xds', 'settings'],
  // The composition: starts the service from its settings.
  ['app'],
  // The command line: serve, check, query, capacity.
  ['cli'],
  // The entry point, src/cli.ts.
  [ENTRY],
];

/** Rooms that speak no protocol and touch no file: the engine and the words and rules below it. */
const PROTOCOL_FREE = ['vocab', 'algorithms', 'throttling', 'core', 'authz'];

const SRC = resolve(import.meta.dirname, '../../src');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

interface Import {
  /** As written in the source. */
  readonly spec: string;
  /** The imported module relative to src/ (without extension), or the package's name; undefined outside src/. */
  readonly target: string | undefined;
  readonly line: number;
}

/** Every module specifier `file` names, as the compiler reads it. */
function specifiers(file: string): { spec: string; pos: number }[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: { spec: string; pos: number }[] = [];
  const visit = (node: ts.Node): void => {
    let spec: ts.Node | undefined;
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) spec = node.moduleSpecifier;
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) spec = node.moduleReference.expression;
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) spec = node.arguments[0];
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) spec = node.argument.literal;
    else if (
      ts.isNewExpression(node) &&
      ts.isIdentifier(node.expression) &&
      node.expression.text === 'URL' &&
      node.arguments?.[1]?.getText() === 'import.meta.url'
    ) {
      spec = node.arguments[0];
    }
    if (spec !== undefined) {
      if (!ts.isStringLiteralLike(spec)) throw new Error(`${relative(SRC, file)}:${line(source, node)}: a module named by an expression cannot be checked`);
      found.push({ spec: spec.text, pos: node.getStart() });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found.map((f) => ({ ...f, pos: line(source, f.pos) }));
}

function line(source: ts.SourceFile, node: ts.Node | number): number {
  return source.getLineAndCharacterOfPosition(typeof node === 'number' ? node : node.getStart()).line + 1;
}

/** module (relative to src/, without extension) → what it imports. */
const graph = new Map<string, Import[]>();
for (const file of files(SRC)) {
  const imports = specifiers(file).map(({ spec, pos }): Import => {
    if (!spec.startsWith('.')) return { spec, target: spec, line: pos };
    const path = relative(SRC, resolve(dirname(file), spec));
    return {
      spec,
      target: path.startsWith('..')
        ? undefined
        : path
            .split(sep)
            .join('/')
            .replace(/\.[jt]s$/, ''),
      line: pos,
    };
  });
  graph.set(relative(SRC, file).split(sep).join('/').replace(/\.ts$/, ''), imports);
}

/** The room a module lives in. */
const room = (id: string): string => (id.includes('/') ? id.split('/')[0]! : ENTRY);
const level = new Map(LAYERS.flatMap((rooms, i) => rooms.map((r) => [r, i] as const)));
/** Imports of modules in other rooms of src/, with where they are written. */
const crossings = [...graph].flatMap(([id, imports]) =>
  imports.filter((i) => i.target !== undefined && i.spec.startsWith('.') && room(i.target) !== room(id)).map((i) => ({ id, ...i, to: room(i.target!) })),
);

describe('architecture', () => {
  it('gives every room of src/ one line in the layer order, and names no room that is not there', () => {
    const rooms = readdirSync(SRC).filter((name) => statSync(join(SRC, name)).isDirectory());
    expect(
      rooms.filter((r) => !level.has(r)),
      'rooms of src/ missing from LAYERS',
    ).toEqual([]);
    expect(
      [...level.keys()].filter((r) => r !== ENTRY && !rooms.includes(r)),
      'rooms in LAYERS that src/ does not have',
    ).toEqual([]);
    expect(level.size, 'a room on two lines of LAYERS').toBe(LAYERS.flat().length);
  });

  it('points every import between rooms down the layer order: none up, none sideways', () => {
    const wrong = crossings
      .filter((c) => (level.get(c.to) ?? Infinity) >= (level.get(room(c.id)) ?? -Infinity))
      .map((c) => `src/${c.id}.ts:${c.line} imports '${c.spec}': ${c.to} is not below ${room(c.id)}`);
    expect(wrong).toEqual([]);
    // The order is not vacuous: arrows run from the top room to the bottom one.
    expect(crossings.some((c) => room(c.id) === 'app' && c.to === 'vocab')).toBe(true);
  });

  it('reads lazy imports too (the composition loads the xDS client and TLS credentials on demand)', () => {
    expect(graph.get('app/xds-rules')?.map((i) => i.target)).toContain('xds/ads-client');
    expect(graph.get('app/listeners')?.map((i) => i.target)).toContain('server/grpc/tls-credentials');
  });

  it('keeps the vocabulary to Node built-ins, and the engine and the rooms below it free of protocols and files', () => {
    const packages = (rooms: readonly string[]) =>
      [...graph].flatMap(([id, imports]) => imports.filter((i) => rooms.includes(room(id)) && !i.spec.startsWith('.')).map((i) => ({ id, ...i })));
    for (const i of packages(['vocab'])) expect(i.spec, `src/${i.id}.ts:${i.line}`).toMatch(/^node:/);
    for (const i of packages(PROTOCOL_FREE)) expect(i.spec, `src/${i.id}.ts:${i.line}`).not.toMatch(/^(@grpc|ioredis|yaml|prom-client|node:fs)/);
  });

  it('keeps the src/ root to its entry points: every other module lives in a room', () => {
    const loose = [...graph.keys()].filter((id) => room(id) === ENTRY);
    expect(loose, 'loose files in src/').toEqual(['cli']);
  });

  it("gives no two modules one name, but index.ts and types.ts (a room's entry and its types)", () => {
    const byName = new Map<string, string[]>();
    for (const id of graph.keys()) {
      const name = id.split('/').at(-1)!;
      if (name !== 'index' && name !== 'types') byName.set(name, [...(byName.get(name) ?? []), id]);
    }
    expect([...byName.values()].filter((ids) => ids.length > 1)).toEqual([]);
  });

  it('has no import cycles between modules', () => {
    const state = new Map<string, 'visiting' | 'done'>();
    const visit = (id: string, path: string[]): void => {
      if (state.get(id) === 'done') return;
      if (state.get(id) === 'visiting') throw new Error(`import cycle: ${[...path, id].join(' → ')}`);
      state.set(id, 'visiting');
      for (const i of graph.get(id) ?? []) if (i.spec.startsWith('.') && i.target !== undefined && graph.has(i.target)) visit(i.target, [...path, id]);
      state.set(id, 'done');
    };
    for (const id of graph.keys()) visit(id, []);
    expect(state.size).toBe(graph.size);
  });
});

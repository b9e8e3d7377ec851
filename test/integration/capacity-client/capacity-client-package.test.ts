/**
 * The client library is its own entry point (`ratelimit-sidecar/client`) and pulls in no server code: its import
 * graph stays inside src/capacity-client and needs only gRPC and Node built-ins; compiled on its own (as `npm run build`
 * compiles it, with declarations) it loads through the package's "exports" from a tree that holds nothing else of
 * ours, and talks to a real server from there.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { startRedirector } from '../../support/capacity-client-redirector.js';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../../..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; exports: Record<string, unknown> };

/** Every module reachable from `entry` (relative imports, resolved) and every package it names. */
function importGraph(entry: string): { modules: Set<string>; packages: Set<string> } {
  const modules = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    if (modules.has(file)) return;
    modules.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/^(?:import|export)\s[^'"]*?from\s+'([^']+)'|import\('([^']+)'\)/gm)) {
      const spec = (m[1] ?? m[2])!;
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec).replace(/\.js$/, '.ts'));
      else packages.add(spec);
    }
  };
  visit(entry);
  return { modules, packages };
}

const tmp = mkdtempSync(join(tmpdir(), 'rl-client-pkg-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('capacity client package entry point', () => {
  it('imports nothing outside src/capacity-client but gRPC and Node built-ins', () => {
    const { modules, packages } = importGraph(join(ROOT, 'src/capacity-client/index.ts'));
    for (const m of modules) expect(relative(ROOT, m)).toMatch(/^src\/capacity-client\//);
    for (const p of packages) expect(p).toMatch(/^(node:|@grpc\/grpc-js$|@grpc\/proto-loader$)/);
    expect(modules.size).toBeGreaterThanOrEqual(5);
  });

  it('declares ./client in package.json exports, pointing at the built file and its types', () => {
    expect(pkg.exports['./client']).toEqual({ types: './dist/capacity-client/index.d.ts', default: './dist/capacity-client/index.js' });
    const build = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as { compilerOptions: Record<string, unknown> };
    expect(build.compilerOptions).toMatchObject({ rootDir: 'src', outDir: 'dist', declaration: true });
  });

  it('compiled alone, loads by package name from a tree with no other code of ours and reaches a real server', async () => {
    // The tree `npm run build` makes, but holding only the client: dist/capacity-client, proto/, package.json, node_modules.
    await run(process.execPath, [
      join(ROOT, 'node_modules/typescript/bin/tsc'),
      ...['--outDir', join(tmp, 'dist/capacity-client'), '--declaration', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022'],
      ...['--strict', '--skipLibCheck', '--types', 'node', join(ROOT, 'src/capacity-client/index.ts')],
    ]);
    expect(existsSync(join(tmp, 'dist/capacity-client/index.d.ts'))).toBe(true);
    symlinkSync(join(ROOT, 'proto'), join(tmp, 'proto'));
    symlinkSync(join(ROOT, 'node_modules'), join(tmp, 'node_modules')); // third-party packages only: none of ours
    writeFileSync(join(tmp, 'package.json'), JSON.stringify({ name: pkg.name, type: 'module', exports: pkg.exports }));
    const redirector = await startRedirector('');
    try {
      const script = `
        const { CapacityClient } = await import('${pkg.name}/client');
        const errors = [];
        const client = new CapacityClient({ servers: '${redirector.address}', backoff: { initialMs: 10, maxMs: 20 }, onError: (e) => errors.push(e.code) });
        const r = client.resource('r', 5, { fallback: 'optimistic' });
        while (errors.length === 0) await new Promise((ok) => setTimeout(ok, 10));
        console.log(JSON.stringify({ capacity: r.capacity, error: errors[0] }));
        await client.close();
      `;
      const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: tmp, timeout: 20_000 });
      expect(JSON.parse(stdout)).toEqual({ capacity: 5, error: 'CAPACITY_NO_MASTER' });
      expect((redirector.calls.Discovery ?? 0) + (redirector.calls.GetCapacity ?? 0)).toBeGreaterThan(0);
    } finally {
      await redirector.close();
    }
  });
});

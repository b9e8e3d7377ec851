/**
 * `npm run build`, second step: dist/cli.js (what the image runs) becomes one ES module holding the service
 * and its dependencies, so that start-up does not resolve, read and link ~180 modules and their packages one by
 * one (docs/performance.md#start-up). The other files of dist/ stay as tsc wrote them: the `./client` export,
 * the rules-reload worker (config/load-worker.js) and the Lua scripts are used from there.
 *
 * Every module's `import.meta.url`, `__dirname` and `__filename` are rewritten to the place the module had
 * before bundling (relative to dist/, so the tree can move as a whole, as the image copies it): the .proto
 * files, the Lua scripts, package.json and the packages' own files are found where they always were.
 * Without esbuild (a dependency of tsx, a dev dependency) dist/ is left unbundled and says so.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Plugin } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist');
const ENTRY = join(DIST, 'cli.js');

const esbuild = await import('esbuild').catch(() => undefined);
if (esbuild === undefined) {
  process.stderr.write('bundle: esbuild is not installed (a dependency of tsx): dist/cli.js left unbundled\n');
  process.exit(0);
}

const posix = (p: string) => p.split(sep).join('/');
/** The rewrite of one module: its location, relative to dist/, replaces the bundle's. */
const relocate: Plugin = {
  name: 'relocate',
  setup(build) {
    build.onLoad({ filter: /\.(c|m)?js$/ }, async (args) => {
      let text = await readFile(args.path, 'utf8');
      const rel = posix(relative(DIST, args.path));
      if (text.includes('import.meta.url')) text = text.replaceAll('import.meta.url', `__rlUrl(${JSON.stringify(rel)})`);
      if (/\b__(dirname|filename)\b/.test(text)) {
        text = text.replace(/\b__dirname\b/g, `__rlPath(${JSON.stringify(posix(dirname(rel)))})`).replace(/\b__filename\b/g, `__rlPath(${JSON.stringify(rel)})`);
      }
      return { contents: text, loader: 'js', resolveDir: dirname(args.path) };
    });
  },
};

// The bundle sits in dist/: a module's old place is that path relative to the bundle's own URL.
const banner = [
  "import { createRequire as __rlCreateRequire } from 'node:module';",
  "import { fileURLToPath as __rlFileURLToPath } from 'node:url';",
  'const require = __rlCreateRequire(import.meta.url);',
  'const __rlUrl = (p) => new URL(p, import.meta.url).href;',
  'const __rlPath = (p) => __rlFileURLToPath(new URL(p, import.meta.url)).replace(/\\/$/, "");',
].join('\n');

const result = await esbuild.build({
  entryPoints: [ENTRY],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  write: false,
  outfile: ENTRY,
  banner: { js: banner },
  plugins: [relocate],
  logLevel: 'warning',
  legalComments: 'none',
});
await writeFile(ENTRY, result.outputFiles[0]!.contents);
// tsc's map describes the unbundled file
await rm(`${ENTRY}.map`, { force: true });

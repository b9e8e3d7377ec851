/**
 * `npm run build`, second step: what the image runs starts from one file and skips most of V8's compiling.
 *   - dist/cli.bundle.cjs: the service and its dependencies as one script, so that start-up does not resolve,
 *     read and link ~180 modules and their packages one by one; packages and Node built-ins that only some
 *     configurations use are evaluated on first use (stand-ins: LAZY, LAZY_BUILTINS);
 *   - dist/cli.bundle.cache: V8's code cache of that script, made after the script's top level has run, rules
 *     have been checked and ioredis has been evaluated, so it holds the functions compiled by then. (Node's own
 *     compile cache, module.enableCompileCache(), keeps only what is compiled before a script runs: a start
 *     with it took ~20 % more CPU than with this one, and it must write its cache where the image is read-only.)
 *     V8 accepts it under the V8 options it was made with, heap sizes aside;
 *   - dist/cli.js (tsc's output replaced): a CommonJS script (dist/package.json says so), which spares the start
 *     the ES module loader, and loads the bundle with that cache (compiled as usual when V8 rejects it).
 * The other files of dist/ stay as tsc wrote them, ES modules (each folder has a package.json saying so): the
 * `./client` export, the rules-reload worker (config/load/load-worker.js) and the Lua scripts are used from there.
 * Every module's `import.meta.url`, `__dirname` and `__filename` are rewritten to the place the module had
 * before bundling (relative to dist/, so the tree can move as a whole, as the image copies it).
 * esbuild is a dev dependency; without it (an install with --omit=dev) dist/ is left unbundled and says so.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Plugin } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist');
const ENTRY = join(DIST, 'cli.js');
const BUNDLE = join(DIST, 'cli.bundle.cjs');

const esbuild = await import('esbuild').catch(() => undefined);
// dist/cli.js is tsc's ES module until the loader replaces it: until then dist/ is no CommonJS folder.
await rm(join(DIST, 'package.json'), { force: true });
if (esbuild === undefined) {
  process.stderr.write('bundle: esbuild is not installed (a dev dependency): dist/cli.js left unbundled\n');
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
        text = text
          .replace(/\b__dirname\b/g, `__rlPath(${JSON.stringify(posix(dirname(rel)))})`)
          .replace(/\b__filename\b/g, `__rlPath(${JSON.stringify(rel)})`);
      }
      return { contents: text, loader: 'js', resolveDir: dirname(args.path) };
    });
  },
};

/**
 * Packages that only some configurations use (grpc-js for TLS credentials and the clients, proto-loader,
 * re2js for regex matchers, maxmind for GeoIP, ioredis for BACKEND=redis, OpenTelemetry for TRACING_ENABLED): our modules import a stand-in with
 * the same export names, whose properties load the package on first use. Nothing changes but when the package
 * is evaluated: the first `grpc.status`, `new Redis(...)` or `RE2JS.compile(...)`.
 */
const LAZY = [
  '@grpc/grpc-js',
  '@grpc/proto-loader',
  're2js',
  'maxmind',
  'ioredis',
  // OpenTelemetry (TRACING_ENABLED): its tracer module is imported only when tracing is on, and these with it.
  '@opentelemetry/api',
  '@opentelemetry/core',
  '@opentelemetry/propagator-b3',
  '@opentelemetry/resources',
  '@opentelemetry/sdk-trace',
  '@opentelemetry/exporter-trace-otlp-proto',
  '@opentelemetry/exporter-trace-otlp-grpc',
];
const require = createRequire(import.meta.url);
const lazy: Plugin = {
  name: 'lazy',
  setup(build) {
    const filter = new RegExp(`^(${LAZY.map((p) => p.replace(/[/.]/g, '\\$&')).join('|')})$`);
    build.onResolve({ filter }, (args) => (args.namespace === 'lazy' || args.pluginData === 'real' ? undefined : { path: args.path, namespace: 'lazy' }));
    build.onLoad({ filter: /.*/, namespace: 'lazy' }, (args) => {
      const names = Object.keys(require(args.path) as object);
      const contents = [
        'let real;',
        `const load = () => (real ??= require(${JSON.stringify(args.path)}));`,
        `__rlLazy[${JSON.stringify(args.path)}] = load;`,
        `for (const name of ${JSON.stringify(names)}) Object.defineProperty(module.exports, name, { enumerable: true, get: () => load()[name] });`,
      ].join('\n');
      return { contents, loader: 'js', resolveDir: ROOT };
    });
  },
};

/**
 * Node built-ins that a module's top level requires but that a start does not use: zlib and https (prom-client's
 * push gateway), dns (ioredis' cluster mode), readline: the same kind of stand-in, whose properties are the
 * module's own. A dependency often takes a function out at its top level (`const { gzipSync } = require('zlib')`):
 * a plain function of the built-in (lower-case name, no class, no properties of its own such as util.promisify's)
 * is stood in for by a function that calls it. Not here: those every start loads anyway (node:http2 needs tls,
 * crypto, net, assert, streams; pino needs worker_threads; net loads node:cluster, child_process and dgram at a
 * server's first listen), and node:cluster's methods (`on`) are inherited and must run on the real object.
 */
const LAZY_BUILTINS = ['dns', 'https', 'readline', 'zlib'];
const lazyBuiltins: Plugin = {
  name: 'lazy-builtins',
  setup(build) {
    const filter = new RegExp(`^(node:)?(${LAZY_BUILTINS.join('|')})$`);
    build.onResolve({ filter }, (args) =>
      args.namespace === 'lazy-builtin' ? undefined : { path: args.path.replace(/^(node:)?/, 'node:'), namespace: 'lazy-builtin' },
    );
    build.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, (args) => {
      const real = require(args.path) as Record<string, unknown>;
      const plain = (v: unknown) =>
        typeof v === 'function' &&
        Reflect.ownKeys(v).every((k) => k === 'length' || k === 'name' || k === 'prototype') &&
        !/^class\b/.test(Function.prototype.toString.call(v));
      const names = Object.keys(real);
      const forwarded = names.filter((n) => /^[a-z]/.test(n) && plain(real[n]));
      const contents = [
        'let real;',
        `const load = () => (real ??= require(${JSON.stringify(args.path)}));`,
        'const forward = (get) => function (...args) { return new.target === undefined ? Reflect.apply(get(), this === standIn ? load() : this, args) : Reflect.construct(get(), args, new.target); };',
        'const standIn = {};',
        `for (const name of ${JSON.stringify(names.filter((n) => !forwarded.includes(n)))}) Object.defineProperty(standIn, name, { enumerable: true, get: () => load()[name] });`,
        `for (const name of ${JSON.stringify(forwarded)}) Object.defineProperty(standIn, name, { enumerable: true, value: forward(() => load()[name]) });`,
        'module.exports = standIn;',
      ].join('\n');
      return { contents, loader: 'js', resolveDir: ROOT };
    });
  },
};

/**
 * Lazy packages evaluated by the process that makes the code cache, so that their code is in it: ioredis, which
 * BACKEND=redis (the usual production set-up) loads at every start.
 */
const CODE_CACHE_PACKAGES = ['ioredis'];

/** Rules checked before the cache is made, so that loading rules is compiled code at start. */
const WARM_RULES =
  'domain: warm\ndescriptors:\n  - key: user\n    rate_limit: {unit: second, requests_per_unit: 10}\n  - key: path\n    value: /a\n    descriptors:\n      - key: ip\n        rate_limit: {unit: minute, requests_per_unit: 5}\n';

/**
 * dist/cli.js, a CommonJS script (dist/package.json says so; every folder under dist/ keeps tsc's ES modules with a
 * package.json of its own): run as `node dist/cli.js`, it skips the ES module loader's module jobs.
 */
const LOADER = `// Written by scripts/bundle.ts: runs cli.bundle.cjs, with V8's code cache of it when V8 accepts it.
'use strict';
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { Script } = require('node:vm');

const file = join(__dirname, 'cli.bundle.cjs');
// V8 accepts a code cache only under the options it was made with; heap sizes do not count (the image's, a
// Kubernetes example's, an operator's own all use it). Under other V8 options the bundle is compiled as usual.
const cacheFile = join(__dirname, 'cli.bundle.cache');
const writeCache = process.env.RATELIMIT_WRITE_CODE_CACHE === '1';
// Making the cache only loads the script: without a command line, its main() does not run.
if (writeCache) process.argv.length = 1;
let cachedData;
try {
  if (!writeCache) cachedData = readFileSync(cacheFile);
} catch {
  // no cache: compiled as usual
}
const script = new Script(\`(function (exports, require, module, __filename, __dirname) {\${readFileSync(file, 'utf8')}\\n})\`, { filename: file, cachedData });
// RATELIMIT_CODE_CACHE_REPORT=1: says whether this start used the code cache (for tests and the curious).
if (process.env.RATELIMIT_CODE_CACHE_REPORT === '1') process.stderr.write(\`code cache: \${cachedData === undefined ? 'none' : script.cachedDataRejected ? 'rejected' : 'used'} (\${cacheFile})\\n\`);
const bundle = { exports: {} };
script.runInThisContext()(bundle.exports, require, bundle, file, __dirname);
exports.main = bundle.exports.main;
exports.serveHelp = bundle.exports.serveHelp;
if (writeCache) {
  // Warmed by checking a rules directory first: the functions that load rules join the cache too.
  const rules = process.env.RATELIMIT_CODE_CACHE_RULES;
  for (const name of (process.env.RATELIMIT_CODE_CACHE_PACKAGES ?? '').split(',')) bundle.lazy[name]?.();
  Promise.resolve(rules ? bundle.exports.main(['check', rules]) : 0).then(() => writeFileSync(cacheFile, script.createCachedData()));
}
`;

// The bundle sits in dist/: a module's old place is that path relative to the bundle's own file.
const banner = [
  "const __rlBase = require('node:url').pathToFileURL(__filename).href;",
  // The lazy packages' loaders, by name: the process that makes the code cache loads some (CODE_CACHE_PACKAGES).
  'const __rlLazy = (module.lazy = {});',
  'const __rlUrl = (p) => new URL(p, __rlBase).href;',
  "const __rlPath = (p) => require('node:url').fileURLToPath(new URL(p, __rlBase)).replace(/\\/$/, '');",
].join('\n');

const result = await esbuild.build({
  entryPoints: [ENTRY],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node24',
  write: false,
  outfile: BUNDLE,
  banner: { js: banner },
  plugins: [lazy, lazyBuiltins, relocate],
  logLevel: 'warning',
  legalComments: 'none',
  // Smaller source to parse and to keep in the heap (V8 holds a script's source); names stay for stack traces.
  minifyWhitespace: true,
  minifySyntax: true,
  keepNames: false,
});
await writeFile(BUNDLE, result.outputFiles[0]!.contents);
// dist/ becomes a CommonJS folder for cli.js alone: every folder in it stays ES modules (the `./client` export,
// the rules-reload worker), as package.json's "type" says for the rest of the package.
for (const e of await readdir(DIST, { withFileTypes: true }))
  if (e.isDirectory()) await writeFile(join(DIST, e.name, 'package.json'), '{ "type": "module" }\n');
await writeFile(ENTRY, LOADER);
await writeFile(join(DIST, 'package.json'), '{ "type": "commonjs" }\n');
// tsc's map described the unbundled file
await rm(`${ENTRY}.map`, { force: true });

// The code cache, made by a process with the V8 options of `npm start` (the loader writes it when asked to).
const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
const flags = pkg.scripts.start.split(/\s+/).filter((a) => a.startsWith('--'));
for (const f of await readdir(DIST)) if (/^cli\.bundle(\..*)?\.cache$/.test(f)) await rm(join(DIST, f));
const rules = await mkdtemp(join(tmpdir(), 'rl-bundle-'));
try {
  await writeFile(join(rules, 'rules.yaml'), WARM_RULES);
  execFileSync(process.execPath, [...flags, ENTRY], {
    env: {
      ...process.env,
      NODE_OPTIONS: '',
      RATELIMIT_WRITE_CODE_CACHE: '1',
      RATELIMIT_CODE_CACHE_RULES: rules,
      RATELIMIT_CODE_CACHE_PACKAGES: CODE_CACHE_PACKAGES.join(','),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
} finally {
  await rm(rules, { recursive: true, force: true });
}

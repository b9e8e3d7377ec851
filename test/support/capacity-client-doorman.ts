/**
 * The real Doorman capacity server (../shared/tools/doorman, or DOORMAN_BIN) for the capacity client's tests:
 * started with a YAML resource file on free ports (gRPC and debug), 127.0.0.1 only, killable with SIGKILL and
 * restartable on the same port (outage tests). Runs under a node guard that kills it when the test process dies
 * (its stdin pipe closes even on SIGKILL), so no Doorman outlives the test. Under CI=true a missing binary fails.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { eventually } from './eventually.js';
import { freePort } from './redis.js';

/** The Doorman binary, or undefined (tests skip) — except under CI=true, where its absence is an error. */
export function doormanBinary(): string | undefined {
  const candidate = process.env.DOORMAN_BIN ?? resolve(import.meta.dirname, '../../../shared/tools/doorman/doorman');
  if (existsSync(candidate)) return candidate;
  if (process.env.CI === 'true') throw new Error(`Doorman server not found at ${candidate} (set DOORMAN_BIN); CI=true requires it`);
  return undefined;
}

/** Prints the child's pid on stdout, then SIGKILLs the child when stdin ends (the test process died). */
const GUARD = `
const child = require('node:child_process').spawn(process.argv[1], process.argv.slice(2), { stdio: ['ignore', 'ignore', 'inherit'] });
process.stdout.write(String(child.pid) + '\\n');
const stop = () => child.kill('SIGKILL');
process.stdin.on('end', stop);
process.stdin.on('error', stop);
process.stdin.resume();
process.on('SIGTERM', stop);
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 0 : 1)));
`;

function accepts(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });
}

export class DoormanProcess {
  private guard: ChildProcess | undefined;
  private pid: number | undefined;
  /** Set when the server exited without being killed (a Doorman crash), with the end of its stderr. */
  crashed: string | undefined;
  private readonly dir: string;
  readonly configFile: string;

  private constructor(
    private readonly binary: string,
    readonly port: number,
    private readonly debugPort: number,
    config: string,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'rl-doorman-'));
    this.configFile = join(this.dir, 'resources.yml');
    writeFileSync(this.configFile, config);
  }

  /** A Doorman server with `config` (Doorman's YAML resource file), started. */
  static async start(binary: string, config: string): Promise<DoormanProcess> {
    const server = new DoormanProcess(binary, await freePort(), await freePort(), config);
    await server.start();
    return server;
  }

  /** Doorman's own view of a resource (its /debug/resources page): capacity, sum of grants, sum of wants, clients. */
  async resourceStatus(id: string): Promise<{ capacity: number; sumHas: number; sumWants: number; clients: number } | undefined> {
    const html = await (await fetch(`http://127.0.0.1:${this.debugPort}/debug/resources`)).text();
    const cells = html
      .replace(/<[^>]*>/g, '\n')
      .split('\n')
      .map((c) => c.trim())
      .filter((c) => c !== '');
    const at = cells.indexOf(id);
    if (at < 0) return undefined;
    const [capacity, sumHas, sumWants, clients] = cells.slice(at + 1, at + 5).map(Number);
    return { capacity: capacity!, sumHas: sumHas!, sumWants: sumWants!, clients: clients! };
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    if (this.guard) return;
    const args = ['-logtostderr', `-config=${this.configFile}`, `-port=${this.port}`, `-debug_port=${this.debugPort}`, '-hostname=127.0.0.1'];
    const guard = spawn(process.execPath, ['-e', GUARD, this.binary, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    (guard.stdin as Socket | null)?.unref();
    let stderr = '';
    guard.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
    this.guard = guard;
    const pid = new Promise<number>((ok) => guard.stdout?.once('data', (c: Buffer) => ok(Number(c.toString().trim()))));
    const exited = new Promise<never>((_, reject) => guard.once('exit', (code) => reject(new Error(`doorman :${this.port} exited (${code}): ${stderr}`))));
    exited.catch(() => undefined);
    guard.once('exit', (code) => {
      if (this.guard !== guard) return; // killed on purpose
      this.guard = undefined;
      // Doorman died by itself (e.g. its ReleaseCapacity writes a map without a lock, so concurrent releases crash
      // it with "concurrent map writes"): say so, or every later test only sees grants that never come
      this.crashed = `doorman :${this.port} exited by itself (${code}): ${stderr.slice(-1500)}`;
      console.error(this.crashed);
    });
    this.pid = await Promise.race([pid, exited]);
    await Promise.race([eventually(() => accepts(this.port), { timeoutMs: 10_000, what: `doorman :${this.port}` }), exited]);
  }

  /** SIGKILL (no goodbye to clients, as in a crash); resolves when the process is gone. */
  async kill(): Promise<void> {
    const guard = this.guard;
    if (!guard || this.pid === undefined) return;
    this.guard = undefined;
    const gone = new Promise<void>((ok) => (guard.exitCode !== null || guard.signalCode !== null ? ok() : guard.once('exit', () => ok())));
    process.kill(this.pid, 'SIGKILL');
    await gone;
  }

  async destroy(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

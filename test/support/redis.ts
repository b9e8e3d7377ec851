/**
 * Real redis-server processes for integration tests: standalone, Sentinel (1 master + 1 sentinel) and a
 * 3-master Cluster. Each binds 127.0.0.1 on free ports, persists nothing (`--save '' --appendonly no`, a temp
 * dir) and is stopped with SIGTERM (awaiting exit) by `stop()`. Never touches the Redis on 6379.
 *
 * No server outlives the test process, however it ends: vitest ends its workers with a signal, which runs
 * no exit hook, so each redis-server runs under a tiny node guard that stops it when the guard's stdin pipe
 * from the test process closes (that happens even on SIGKILL).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { eventually } from './eventually.js';

const run = promisify(execFile);
const HOST = '127.0.0.1';
const live = new Set<ChildProcess>();

process.on('exit', () => {
  for (const child of live) child.kill('SIGTERM');
});

/** The guard: runs argv[1..] and SIGTERMs it when stdin ends or the guard gets SIGTERM; exits with it. */
const GUARD = `
const child = require('node:child_process').spawn(process.argv[1], process.argv.slice(2), { stdio: ['ignore', 'ignore', 'inherit'] });
const stop = () => child.kill('SIGTERM');
process.stdin.on('end', stop);
process.stdin.on('error', stop);
process.stdin.resume();
process.on('SIGTERM', stop);
child.on('error', (e) => { console.error(String(e)); process.exit(127); });
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 0 : 1)));
`;

/** Runs `command` under the guard (stopped with the test process however it ends); stderr is piped. */
export function spawnGuarded(command: string, args: readonly string[]): ChildProcess {
  const child = spawn(process.execPath, ['-e', GUARD, command, ...args], { stdio: ['pipe', 'ignore', 'pipe'] });
  // the pipe only signals our death to the guard; it must not keep this process alive
  (child.stdin as Socket | null)?.unref();
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/** SIGTERM and wait for the process to exit. */
export function stopChild(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** A port nobody listens on right now (the OS picks it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, HOST, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Send one command in RESP and return the raw reply text; rejects on connection errors. */
export function rawCommand(port: number, args: readonly string[], timeoutMs = 1000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: HOST, port });
    let reply = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no reply from ${port} within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on('connect', () => {
      let out = `*${args.length}\r\n`;
      for (const a of args) out += `$${Buffer.byteLength(a)}\r\n${a}\r\n`;
      socket.write(out);
    });
    socket.on('data', (chunk) => {
      reply += chunk.toString('utf8');
      const complete = respEnd(reply, 0) !== undefined;
      if (complete) {
        clearTimeout(timer);
        socket.end();
        resolve(reply);
      }
    });
  });
}

/** End offset of the RESP value starting at `pos`, or undefined while incomplete (ASCII replies only). */
function respEnd(text: string, pos: number): number | undefined {
  const eol = text.indexOf('\r\n', pos);
  if (eol < 0) return undefined;
  const type = text[pos];
  const n = Number(text.slice(pos + 1, eol));
  if (type === '$') return n < 0 ? eol + 2 : text.length >= eol + 2 + n + 2 ? eol + 2 + n + 2 : undefined;
  if (type === '*') {
    let at: number | undefined = eol + 2;
    for (let i = 0; i < n && at !== undefined; i++) at = respEnd(text, at);
    return at;
  }
  return eol + 2;
}

function waitFor(what: string, check: () => Promise<boolean>): Promise<void> {
  return eventually(check, { what, timeoutMs: 15_000, intervalMs: 25 });
}

async function pong(port: number): Promise<boolean> {
  return (await rawCommand(port, ['PING'], 500)).startsWith('+PONG');
}

/** One server process on a fixed port that can be stopped and started again (for outage tests). */
export class RedisProcess {
  private child: ChildProcess | undefined;
  private readonly dir: string;
  constructor(
    readonly port: number,
    private readonly extraArgs: readonly string[] = [],
    private readonly sentinelConfig?: string,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), `rl-redis-${port}-`));
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  async start(): Promise<void> {
    if (this.child) return;
    let args: string[];
    if (this.sentinelConfig !== undefined) {
      const file = join(this.dir, 'sentinel.conf');
      writeFileSync(file, this.sentinelConfig);
      args = [file, '--sentinel', '--port', String(this.port), '--bind', HOST, '--dir', this.dir];
    } else {
      args = ['--port', String(this.port), '--bind', HOST, '--save', '', '--appendonly', 'no', '--dir', this.dir];
      args.push(...this.extraArgs);
    }
    const child = spawnGuarded('redis-server', args);
    let stderr = '';
    child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    this.child = child;
    const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`redis-server :${this.port} exited (${code}): ${stderr}`))));
    exited.catch(() => undefined);
    child.once('exit', () => {
      live.delete(child);
      if (this.child === child) this.child = undefined;
    });
    await Promise.race([waitFor(`redis :${this.port}`, () => pong(this.port)), exited]);
  }

  /** SIGTERM and wait for the process to exit. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    await stopChild(child);
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  readonly process: RedisProcess;
  /** Stop the server (it keeps its port; `restart()` brings it back empty). */
  stopRedis(): Promise<void>;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Runs a start-up that binds ports from freePort() again, on fresh ports, when a server exits while starting
 * (at most 3 tries): between asking the OS for a free port and redis-server binding it, another test file
 * running at the same time may have taken it (redis-server then exits 1, logging "Address already in use").
 */
async function onFreshPorts<T>(start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      if (attempt >= 3 || !/redis-server :\d+ exited \(1\)/.test(String(error))) throw error;
    }
  }
}

/** A standalone server; `extraArgs` are further redis-server options (e.g. `--repl-diskless-sync-delay 0`). */
export function startRedis(extraArgs: readonly string[] = []): Promise<RedisServer> {
  return onFreshPorts(() => startRedisOnce(extraArgs));
}

async function startRedisOnce(extraArgs: readonly string[]): Promise<RedisServer> {
  const port = await freePort();
  const proc = new RedisProcess(port, extraArgs);
  try {
    await proc.start();
  } catch (error) {
    await proc.destroy();
    throw error;
  }
  return {
    url: `redis://${HOST}:${port}`,
    port,
    process: proc,
    stopRedis: () => proc.stop(),
    restart: () => proc.start(),
    stop: () => proc.destroy(),
  };
}

export interface SentinelSetup {
  readonly masterName: string;
  readonly masterPort: number;
  readonly sentinels: readonly { host: string; port: number }[];
  stop(): Promise<void>;
}

export interface SentinelOptions {
  /** How long the master must be unreachable before the sentinel fails over (default 5000 ms). */
  readonly downAfterMs?: number;
  /** Replicas (host:port ports on 127.0.0.1) the sentinel knows from the start, instead of finding them by INFO within 10 s. */
  readonly knownReplicas?: readonly number[];
}

/**
 * A sentinel watching the master on `masterPort` (start it first with startRedis) as `mymaster`. Started again on a
 * fresh port when its own exited (the port taken meanwhile by a test file running beside it: the PING that saw it
 * start may have been answered by that other server).
 */
export function startSentinel(masterPort: number, options: SentinelOptions = {}): Promise<SentinelSetup> {
  return onFreshPorts(() => startSentinelOnce(masterPort, options));
}

async function startSentinelOnce(masterPort: number, options: SentinelOptions): Promise<SentinelSetup> {
  const port = await freePort();
  const config = [
    `sentinel monitor mymaster ${HOST} ${masterPort} 1`,
    `sentinel down-after-milliseconds mymaster ${options.downAfterMs ?? 5000}`,
    'sentinel failover-timeout mymaster 5000',
    ...(options.knownReplicas ?? []).map((p) => `sentinel known-replica mymaster ${HOST} ${p}`),
    '',
  ].join('\n');
  const proc = new RedisProcess(port, [], config);
  try {
    await proc.start();
    await waitFor('sentinel to know its master', async () => {
      if (!proc.running) return true; // exited: said below, so that onFreshPorts tries another port
      return (await rawCommand(port, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', 'mymaster'])).includes(String(masterPort));
    });
    if (!proc.running) throw new Error(`redis-server :${port} exited (1): the sentinel's port was taken`);
  } catch (error) {
    await proc.destroy();
    throw error;
  }
  return {
    masterName: 'mymaster',
    masterPort,
    sentinels: [{ host: HOST, port }],
    stop: () => proc.destroy(),
  };
}

export interface ClusterSetup {
  readonly nodes: readonly { host: string; port: number }[];
  /** The node processes, for fault injection (pause, kill and restart one node). */
  readonly processes: readonly RedisProcess[];
  stop(): Promise<void>;
}

/** Three masters (no replicas) sharing the 16384 slots, ready when every node says cluster_state:ok. */
export function startCluster(): Promise<ClusterSetup> {
  return onFreshPorts(startClusterOnce);
}

async function startClusterOnce(): Promise<ClusterSetup> {
  const procs: RedisProcess[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const busPort = await freePort();
    procs.push(
      new RedisProcess(port, [
        '--cluster-enabled',
        'yes',
        '--cluster-port',
        String(busPort),
        '--cluster-config-file',
        `nodes-${port}.conf`,
        '--cluster-node-timeout',
        '5000',
      ]),
    );
  }
  const stop = async (): Promise<void> => {
    await Promise.all(procs.map((p) => p.destroy()));
  };
  try {
    await Promise.all(procs.map((p) => p.start()));
    await run('redis-cli', ['--cluster', 'create', ...procs.map((p) => `${HOST}:${p.port}`), '--cluster-replicas', '0', '--cluster-yes']);
    await waitFor('cluster_state:ok', async () => {
      const infos = await Promise.all(procs.map((p) => rawCommand(p.port, ['CLUSTER', 'INFO'])));
      return infos.every((i) => i.includes('cluster_state:ok'));
    });
  } catch (error) {
    await stop();
    throw error;
  }
  return { nodes: procs.map((p) => ({ host: HOST, port: p.port })), processes: procs, stop };
}

/** True when the Redis binaries are installed (CI installs them with apt). */
export async function redisAvailable(): Promise<boolean> {
  try {
    await run('redis-server', ['--version']);
    await run('redis-cli', ['--version']);
    return true;
  } catch {
    return false;
  }
}

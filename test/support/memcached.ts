/**
 * Real memcached processes for tests: each binds 127.0.0.1 on a free port, runs under the guard of redis.ts
 * (stopped with the test process however it ends) and can be stopped, restarted on its port (empty), or
 * paused (SIGSTOP … SIGCONT on the memcached process itself, found by its own `stats pid`).
 */
import type { ChildProcess } from 'node:child_process';
import { createConnection } from 'node:net';
import { eventually } from './eventually.js';
import { freePort, spawnGuarded, stopChild } from './redis.js';

const HOST = '127.0.0.1';

/** Sends raw text-protocol bytes and resolves with the reply once it ends with one of `ends` (default END/STORED/...). */
export function memcachedCommand(port: number, command: string, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: HOST, port });
    let reply = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no reply from memcached :${port} within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on('connect', () => socket.write(command));
    socket.on('data', (chunk) => {
      reply += chunk.toString('utf8');
      if (/(^|\r\n)(END|STORED|NOT_STORED|NOT_FOUND|DELETED|OK|ERROR|EN|HD[^\r]*|VERSION [^\r]*|\d+|(CLIENT|SERVER)_ERROR[^\r]*)\r\n$/.test(reply)) {
        clearTimeout(timer);
        socket.end();
        resolve(reply);
      }
    });
  });
}

/** The value stored under `key`, or undefined. */
export async function memcachedGet(port: number, key: string): Promise<string | undefined> {
  const reply = await memcachedCommand(port, `get ${key}\r\n`);
  const m = /^VALUE \S+ \d+ \d+\r\n([^\r]*)\r\n/.exec(reply);
  return m?.[1];
}

export class MemcachedProcess {
  private child: ChildProcess | undefined;
  private paused: number | undefined;

  constructor(
    readonly port: number,
    private readonly extraArgs: readonly string[] = [],
  ) {}

  get address(): string {
    return `${HOST}:${this.port}`;
  }

  async start(): Promise<void> {
    if (this.child) return;
    // memcached refuses to run as root unless told which user to be (CI runs as root).
    const user = process.getuid?.() === 0 ? ['-u', 'root'] : [];
    const child = spawnGuarded('memcached', ['-l', HOST, '-p', String(this.port), '-U', '0', '-m', '64', '-t', '1', ...user, ...this.extraArgs]);
    let stderr = '';
    child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    this.child = child;
    const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`memcached :${this.port} exited (${code}): ${stderr}`))));
    exited.catch(() => undefined);
    child.once('exit', () => {
      if (this.child === child) this.child = undefined;
    });
    const plain = !this.extraArgs.includes('-Z');
    const up = plain
      ? eventually(async () => (await memcachedCommand(this.port, 'version\r\n', 500)).startsWith('VERSION'), {
          what: `memcached :${this.port}`,
          timeoutMs: 15_000,
          intervalMs: 25,
        })
      : eventually(() => portOpen(this.port), { what: `memcached (TLS) :${this.port}`, timeoutMs: 15_000, intervalMs: 25 });
    await Promise.race([up, exited]);
  }

  /** The memcached process id (its own `stats pid`). */
  async pid(): Promise<number> {
    const stats = await memcachedCommand(this.port, 'stats\r\n');
    const m = /STAT pid (\d+)/.exec(stats);
    if (!m) throw new Error(`no pid in memcached :${this.port} stats`);
    return Number(m[1]);
  }

  /** SIGSTOP: connections are accepted by the kernel, nothing is answered. */
  async pause(): Promise<void> {
    this.paused = await this.pid();
    process.kill(this.paused, 'SIGSTOP');
  }

  resume(): void {
    if (this.paused !== undefined) process.kill(this.paused, 'SIGCONT');
    this.paused = undefined;
  }

  async stop(): Promise<void> {
    this.resume();
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    await stopChild(child);
  }

  /** Stops it and starts it again on the same port, empty. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: HOST, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A memcached on a free port (tried again on a fresh port when another test took it meanwhile). */
export async function startMemcached(extraArgs: readonly string[] = []): Promise<MemcachedProcess> {
  for (let attempt = 1; ; attempt++) {
    const server = new MemcachedProcess(await freePort(), extraArgs);
    try {
      await server.start();
      return server;
    } catch (error) {
      if (attempt >= 3) throw error;
    }
  }
}

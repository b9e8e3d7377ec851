/**
 * Faults on real redis-server processes (started by redis.ts) while traffic runs: pause (SIGSTOP … SIGCONT),
 * kill -9 and restart (counts lost), SCRIPT FLUSH (cached scripts gone: EVALSHA must fall back), CLIENT KILL
 * (the service's connections cut). Every fault is recorded as a window [start, end] in Date.now() ms that ends
 * once the server answers again (for a Cluster: once every node says cluster_state:ok).
 */
import { rawCommand, type RedisProcess } from './redis.js';
import { eventually } from './eventually.js';
import type { Prng } from './prng.js';

export type FaultKind = 'pause' | 'kill' | 'script-flush' | 'client-kill';
export const FAULT_KINDS: readonly FaultKind[] = ['pause', 'kill', 'script-flush', 'client-kill'];

export interface FaultWindow {
  readonly kind: FaultKind;
  readonly port: number;
  readonly start: number;
  end: number;
  readonly detail: string;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The server's pid from INFO (the RedisProcess child is a guard process, not redis-server itself). */
export async function redisPid(port: number): Promise<number> {
  const info = await rawCommand(port, ['INFO', 'server']);
  const m = /process_id:(\d+)/.exec(info);
  if (!m) throw new Error(`no process_id in INFO of :${port}`);
  return Number(m[1]);
}

export class FaultInjector {
  readonly windows: FaultWindow[] = [];

  /** `cluster`: the nodes form one Cluster, so recovery means cluster_state:ok on every node. */
  constructor(
    private readonly nodes: readonly RedisProcess[],
    private readonly random: Prng,
    private readonly cluster = false,
  ) {}

  /** One random fault on a random node; `maxPauseMs` bounds pauses. Resolves once Redis has recovered. */
  async injectRandom(maxPauseMs: number, kinds: readonly FaultKind[] = FAULT_KINDS): Promise<FaultWindow> {
    const node = this.random.pick(this.nodes);
    const kind = this.random.pick(kinds);
    const pid = await redisPid(node.port);
    const window: FaultWindow = { kind, port: node.port, start: Date.now(), end: Number.NaN, detail: '' };
    this.windows.push(window);
    switch (kind) {
      case 'pause': {
        const ms = this.random.int(50, maxPauseMs);
        (window as { detail: string }).detail = `${ms} ms`;
        process.kill(pid, 'SIGSTOP');
        try {
          await sleep(ms);
        } finally {
          process.kill(pid, 'SIGCONT');
        }
        break;
      }
      case 'kill': {
        const down = this.random.int(0, 1000);
        (window as { detail: string }).detail = `down ${down} ms`;
        process.kill(pid, 'SIGKILL');
        await eventually(() => !node.running, { what: `redis :${node.port} to exit`, timeoutMs: 5000, intervalMs: 10 });
        await sleep(down);
        await node.start();
        break;
      }
      case 'script-flush':
        await rawCommand(node.port, ['SCRIPT', 'FLUSH']);
        break;
      case 'client-kill':
        await rawCommand(node.port, ['CLIENT', 'KILL', 'TYPE', 'normal']);
        break;
    }
    await this.recovered();
    window.end = Date.now();
    return window;
  }

  /** Every node answers PING (and, for a Cluster, reports cluster_state:ok). */
  async recovered(timeoutMs = 20_000): Promise<void> {
    await eventually(
      async () => {
        for (const n of this.nodes) {
          const reply = await rawCommand(n.port, this.cluster ? ['CLUSTER', 'INFO'] : ['PING'], 500);
          if (!(this.cluster ? reply.includes('cluster_state:ok') : reply.startsWith('+PONG'))) return false;
        }
        return true;
      },
      { what: 'redis to recover from a fault', timeoutMs, intervalMs: 25 },
    );
  }

  /** Windows as short text lines, for a failure message or a report. */
  describe(origin: number): string[] {
    return this.windows.map((w) => `${w.kind}${w.detail ? ` (${w.detail})` : ''} on :${w.port} at +${w.start - origin} ms, ${w.end - w.start} ms`);
  }
}

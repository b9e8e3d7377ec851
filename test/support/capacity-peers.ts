/**
 * The real Doorman (../shared/tools/doorman, or DOORMAN_BIN) started on free ports with a resource file, and a
 * plain grpc-js caller of doorman.Capacity for the tests (no client library: the messages as sent on the wire).
 * Under CI=true a missing Doorman fails the run instead of skipping.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { doormanDefinition } from '../../src/capacity/doorman-messages.js';
import { freePort } from './redis.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const TOOLS = resolve(REPO, '../shared/tools/doorman');

/** Where a Doorman tool is, or undefined (and an error under CI=true) when it is not there. */
export function doormanTool(name: 'doorman' | 'doorman_client' | 'doorman_shell'): string | undefined {
  const bin = process.env['DOORMAN_BIN'];
  const path = bin !== undefined && bin !== '' ? (name === 'doorman' ? bin : join(resolve(bin, '..'), name)) : join(TOOLS, name);
  if (existsSync(path)) return path;
  if (process.env['CI'] === 'true') throw new Error(`${name} not found at ${path} (set DOORMAN_BIN); CI=true requires the real Doorman`);
  return undefined;
}

export interface DoormanServer {
  readonly address: string;
  readonly process: ChildProcess;
  readonly log: () => string;
  close(): Promise<void>;
}

/** Starts a Doorman server with `config` (YAML text); waits until it answers Discovery as master. */
export async function startDoorman(config: string, options: { parent?: string } = {}): Promise<DoormanServer> {
  const bin = doormanTool('doorman');
  if (bin === undefined) throw new Error('doorman not available');
  const dir = mkdtempSync(join(tmpdir(), 'doorman-'));
  const file = join(dir, 'config.yml');
  writeFileSync(file, config);
  const port = await freePort();
  const debugPort = await freePort();
  const args = [
    '-logtostderr',
    `-config=${file}`,
    `-port=${port}`,
    `-debug_port=${debugPort}`,
    '-hostname=127.0.0.1',
    ...(options.parent ? [`-parent=${options.parent}`] : []),
  ];
  const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr.on('data', (d: Buffer) => {
    if (log.length < 200_000) log += d.toString();
  });
  const address = `127.0.0.1:${port}`;
  const caller = capacityCaller(address);
  try {
    for (let i = 0; ; i++) {
      try {
        const r = await caller.call<{ is_master: boolean }>('Discovery', {}, 500);
        if (r.is_master) break;
      } catch (err) {
        if (i >= 100 || child.exitCode !== null) throw new Error(`doorman did not start: ${String(err)}\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    caller.close();
  }
  return {
    address,
    process: child,
    log: () => log,
    close: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface CapacityCaller {
  call<T = unknown>(method: 'Discovery' | 'GetCapacity' | 'GetServerCapacity' | 'ReleaseCapacity', request: unknown, timeoutMs?: number): Promise<T>;
  close(): void;
}

const Capacity = (grpc.loadPackageDefinition(doormanDefinition()) as unknown as { doorman: { Capacity: grpc.ServiceClientConstructor } }).doorman.Capacity;

export function capacityCaller(address: string): CapacityCaller {
  const client = new Capacity(address, grpc.credentials.createInsecure());
  return {
    call: (method, request, timeoutMs = 5000) =>
      new Promise((resolve, reject) => {
        const fn = client[method] as unknown as (req: unknown, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void;
        fn.call(client, request, { deadline: Date.now() + timeoutMs }, (err, res) => (err ? reject(err) : resolve(res as never)));
      }),
    close: () => client.close(),
  };
}

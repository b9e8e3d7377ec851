/**
 * The heavy downstream events of the audit (rapid reset, disconnecting clients) in a process of their own, so
 * that they do not starve the probe's event loop: the probe then measures Envoy and the server, not its own
 * process. Run as `node --import tsx load-process.ts <kind> <port> <options as JSON>`; prints its result as JSON.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { disconnectingClients, rapidReset } from './downstream.js';

export type LoadKind = 'rapid-reset' | 'disconnect';

const SELF = fileURLToPath(import.meta.url);

async function run(kind: LoadKind, port: number, options: Record<string, number>): Promise<unknown> {
  if (kind === 'rapid-reset') return rapidReset(port, options as Parameters<typeof rapidReset>[1]);
  return disconnectingClients(port, options as Parameters<typeof disconnectingClients>[1]);
}

/** Runs `kind` against Envoy's `port` in a child process; resolves with what it reports. */
export function inChildProcess<T>(kind: LoadKind, port: number, options: Record<string, number>): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', SELF, kind, String(port), JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`${kind} load process exited ${code}: ${err}`));
      try {
        resolve(JSON.parse(out) as T);
      } catch {
        reject(new Error(`${kind} load process printed no result: ${out}${err}`));
      }
    });
  });
}

if (process.argv[1] === SELF) {
  const [kind, port, options] = process.argv.slice(2);
  process.stdout.write(`${JSON.stringify(await run(kind as LoadKind, Number(port), JSON.parse(options ?? '{}') as Record<string, number>))}\n`);
}

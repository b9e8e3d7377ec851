/**
 * One connection to one memcached server, speaking the text protocol (the protocol envoyproxy/ratelimit's
 * client speaks, so that both read and write the same items): commands are pipelined on the socket and their
 * replies matched in order. Only what counting needs: get (several keys), incr, decr, add, version.
 *
 * Failure is loud and quick: a connect that fails or takes longer than `connectTimeoutMs`, a reply slower
 * than `replyTimeoutMs` (a stalled server), a protocol error or too many commands waiting (`maxPending`)
 * destroy the connection and reject every command on it; the owner opens a new one when asked again.
 */
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';

export interface ConnectionOptions_ {
  readonly host: string;
  readonly port: number;
  /** TLS options (node:tls) when MEMCACHE_TLS is on; plain TCP otherwise. */
  readonly tls?: ConnectionOptions;
  readonly connectTimeoutMs: number;
  /** Longest a command waits for its reply before the connection is taken for stalled and destroyed. */
  readonly replyTimeoutMs: number;
  /** Commands waiting on one connection beyond which new ones fail at once. */
  readonly maxPending: number;
}

/** A reply line (`STORED`, `NOT_FOUND`, a number, ...) or, for `get`, the values found by key. */
export type Reply = string | Map<string, string>;

interface Pending {
  readonly multi: boolean;
  readonly sentAt: number;
  readonly resolve: (reply: Reply) => void;
  readonly reject: (error: Error) => void;
}

const CRLF = Buffer.from('\r\n');

export class MemcachedConnection {
  private readonly socket: Socket;
  private readonly pending: Pending[] = [];
  private head = 0;
  private buffer: Buffer = Buffer.alloc(0);
  private values = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private connected = false;
  private failure: Error | undefined;
  private readonly ready: Promise<void>;

  constructor(
    private readonly options: ConnectionOptions_,
    private readonly onClose: (connection: MemcachedConnection, error: Error) => void,
  ) {
    const { host, port, tls } = options;
    this.socket = tls === undefined ? netConnect({ host, port }) : tlsConnect({ host, port, ...tls });
    this.socket.setNoDelay(true);
    this.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => this.fail(new Error(`connect to ${this.where} timed out after ${options.connectTimeoutMs} ms`)), options.connectTimeoutMs);
      this.socket.once(tls === undefined ? 'connect' : 'secureConnect', () => {
        clearTimeout(timer);
        this.connected = true;
        resolve();
      });
      this.socket.once('close', () => {
        clearTimeout(timer);
        reject(this.failure ?? new Error(`connection to ${this.where} closed`));
      });
    });
    this.ready.catch(() => undefined);
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    this.socket.on('error', (error) => this.fail(new Error(`${this.where}: ${error.message}`)));
    this.socket.on('close', () => this.fail(new Error(`connection to ${this.where} closed`)));
  }

  get where(): string {
    return `memcached ${this.options.host}:${this.options.port}`;
  }

  get isOpen(): boolean {
    return this.failure === undefined;
  }

  get isConnected(): boolean {
    return this.connected && this.failure === undefined;
  }

  /** Commands sent and not yet answered. */
  get waiting(): number {
    return this.pending.length - this.head;
  }

  /** Resolves once connected (TLS handshake included); rejects when the connection failed first. */
  whenReady(): Promise<void> {
    return this.ready;
  }

  /** Sends one command (its bytes, CRLF-terminated by the caller); `multi` for `get`, whose reply ends with END. */
  send(command: string | Buffer, multi: boolean): Promise<Reply> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.waiting >= this.options.maxPending) return Promise.reject(new Error(`${this.where}: ${this.waiting} commands already wait for a reply`));
    return new Promise<Reply>((resolve, reject) => {
      this.pending.push({ multi, sentAt: Date.now(), resolve, reject });
      this.socket.write(command);
      if (this.timer === undefined) this.arm();
    });
  }

  close(): void {
    this.fail(new Error(`connection to ${this.where} closed by the client`));
  }

  /** One timer per connection, armed while commands wait: the oldest must be answered within replyTimeoutMs. */
  private arm(): void {
    const oldest = this.pending[this.head];
    if (oldest === undefined) {
      this.timer = undefined;
      return;
    }
    const left = oldest.sentAt + this.options.replyTimeoutMs - Date.now();
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        const first = this.pending[this.head];
        if (first !== undefined && Date.now() - first.sentAt >= this.options.replyTimeoutMs) {
          this.fail(new Error(`${this.where} did not reply within ${this.options.replyTimeoutMs} ms`));
        } else this.arm();
      },
      Math.max(1, left),
    );
    this.timer.unref();
  }

  private fail(error: Error): void {
    if (this.failure !== undefined) return;
    this.failure = error;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.socket.destroy();
    const waiting = this.pending.slice(this.head);
    this.pending.length = 0;
    this.head = 0;
    for (const p of waiting) p.reject(error);
    this.onClose(this, error);
  }

  private onData(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    let at = 0;
    for (;;) {
      const current = this.pending[this.head];
      const eol = this.buffer.indexOf(CRLF, at);
      if (eol < 0) break;
      if (current === undefined) return this.fail(new Error(`${this.where} sent a reply nobody asked for`));
      const line = this.buffer.toString('utf8', at, eol);
      if (current.multi && line.startsWith('VALUE ')) {
        // VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n
        const parts = line.split(' ');
        const bytes = Number(parts[3]);
        if (!Number.isInteger(bytes) || bytes < 0) return this.fail(new Error(`${this.where} sent a malformed VALUE line`));
        if (this.buffer.length < eol + 2 + bytes + 2) break;
        this.values.set(parts[1]!, this.buffer.toString('latin1', eol + 2, eol + 2 + bytes));
        at = eol + 2 + bytes + 2;
        continue;
      }
      at = eol + 2;
      // ERROR: a command the server does not know; anything but END or an error ending a get: out of step.
      const lost = line === 'ERROR' || (current.multi && line !== 'END' && !/^(CLIENT|SERVER)_ERROR/.test(line));
      if (lost) return this.fail(new Error(`${this.where} answered '${line}'`));
      this.head++;
      if (!current.multi) {
        current.resolve(line);
        continue;
      }
      const found = this.values;
      this.values = new Map();
      if (line === 'END') current.resolve(found);
      else current.reject(new Error(`${this.where} answered '${line}'`));
    }
    this.buffer = at >= this.buffer.length ? Buffer.alloc(0) : this.buffer.subarray(at);
    if (this.head > 1024 && this.head * 2 > this.pending.length) {
      this.pending.splice(0, this.head);
      this.head = 0;
    }
    if (this.waiting === 0 && this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }
}

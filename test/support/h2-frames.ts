/**
 * An HTTP/2 client at the frame level, for what node:http2's client will not do: keep opening streams after it
 * has read a GOAWAY, as a client does whose streams were already on the wire, and answer PINGs only when told.
 * Headers go out as HPACK literals (no table, no Huffman); answers are read as frames, their headers not decoded.
 */
import * as net from 'node:net';
import * as tls from 'node:tls';

export interface Frame {
  readonly type: number;
  readonly flags: number;
  readonly stream: number;
  readonly payload: Buffer;
}

export const FRAME = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7 } as const;
const END_STREAM = 0x1;
const END_HEADERS = 0x4;
const ACK = 0x1;

export function frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head.writeUInt8(type, 3);
  head.writeUInt8(flags, 4);
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}

function literal(name: string, value: string): Buffer {
  const n = Buffer.from(name);
  const v = Buffer.from(value);
  if (n.length > 126 || v.length > 126) throw new Error('short header fields only');
  return Buffer.concat([Buffer.from([0x00, n.length]), n, Buffer.from([v.length]), v]);
}

export class FrameClient {
  readonly frames: Frame[] = [];
  private buffered = Buffer.alloc(0);
  private nextStream = 1;
  private waiters: (() => void)[] = [];
  closed = false;

  private constructor(readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    socket.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), frame(FRAME.SETTINGS, 0, 0)]));
  }

  /** `to`: a port on 127.0.0.1, or a Unix socket's path. */
  static connect(to: number | string, options: { tls?: { ca: Buffer; servername: string } } = {}): Promise<FrameClient> {
    return new Promise((resolve, reject) => {
      const where = typeof to === 'number' ? { host: '127.0.0.1', port: to } : { path: to };
      const socket = options.tls
        ? tls.connect({ ...where, ca: options.tls.ca, servername: options.tls.servername, ALPNProtocols: ['h2'] }, () => resolve(new FrameClient(socket)))
        : net.connect(where, () => resolve(new FrameClient(socket)));
      socket.once('error', reject);
    });
  }

  /** Opens a unary gRPC call: HEADERS, then DATA carrying `body` with END_STREAM. Returns its stream id. */
  call(path: string, body: Buffer): number {
    const id = this.nextStream;
    this.nextStream += 2;
    const block = Buffer.concat([
      literal(':method', 'POST'),
      literal(':scheme', 'http'),
      literal(':path', path),
      literal(':authority', 'localhost'),
      literal('content-type', 'application/grpc'),
      literal('te', 'trailers'),
    ]);
    this.socket.write(Buffer.concat([frame(FRAME.HEADERS, END_HEADERS, id, block), frame(FRAME.DATA, END_STREAM, id, body)]));
    return id;
  }

  ackPing(ping: Frame): void {
    this.socket.write(frame(FRAME.PING, ACK, 0, ping.payload));
  }

  /** The first frame (from `from` on) that `match` accepts; rejects after `timeoutMs` or when the connection closes. */
  async next(match: (f: Frame) => boolean, timeoutMs = 5000, from = 0): Promise<Frame> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const found = this.frames.slice(from).find(match);
      if (found !== undefined) return found;
      if (this.closed) throw new Error('the connection closed first');
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`no such frame within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close(): void {
    this.socket.destroy();
  }

  private read(chunk: Buffer): void {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    while (this.buffered.length >= 9) {
      const length = this.buffered.readUIntBE(0, 3);
      if (this.buffered.length < 9 + length) break;
      const f = {
        type: this.buffered[3]!,
        flags: this.buffered[4]!,
        stream: this.buffered.readUInt32BE(5) & 0x7fffffff,
        payload: this.buffered.subarray(9, 9 + length),
      };
      this.buffered = this.buffered.subarray(9 + length);
      if (f.type === FRAME.SETTINGS && (f.flags & ACK) === 0) this.socket.write(frame(FRAME.SETTINGS, ACK, 0));
      this.frames.push(f);
    }
    this.wake();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

/** A GOAWAY frame's last stream id. */
export const goawayLastStream = (f: Frame): number => f.payload.readUInt32BE(0) & 0x7fffffff;

/**
 * A bare HTTP/2 gRPC client (node:http2, no grpc-js): sends any bytes as a unary call's body, framing
 * included if the caller wants to break it, and reports the grpc-status the server ends the stream with.
 * Cheap enough to send 100,000 calls in seconds over a few connections; a call with no status within its
 * timeout is reported as HANG.
 */
import * as http2 from 'node:http2';

export interface H2Outcome {
  /** grpc-status from the trailers (or a trailers-only answer); -1 for HANG, -2 for a reset/closed stream. */
  readonly grpcStatus: number;
  readonly message: string;
  /** The response body without its 5-byte gRPC prefix (OK answers). */
  readonly body: Buffer;
}

export const HANG = -1;
export const RESET = -2;

/** Length-prefixed gRPC message: flag 0 (not compressed), 4-byte big-endian length, the bytes. */
export function grpcFrame(message: Uint8Array, compressedFlag = 0): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(compressedFlag, 0);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

export class RawH2Client {
  private readonly session: http2.ClientHttp2Session;
  constructor(address: string) {
    this.session = http2.connect(`http://${address}`);
    this.session.on('error', () => undefined); // surfaces per stream
  }

  /**
   * Sends `payload` as the whole request body (already framed); resolves with how the stream ended.
   * `grpcTimeout`: the header sent (default `${timeoutMs}m`; null: none); the call still gives up after timeoutMs + 2 s.
   */
  call(path: string, payload: Buffer, timeoutMs: number, grpcTimeout?: string | null): Promise<H2Outcome> {
    return new Promise((resolve) => {
      let status: number | undefined;
      let message = '';
      const chunks: Buffer[] = [];
      let settled = false;
      const finish = (o: H2Outcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(o);
      };
      const stream = this.session.request({
        ':method': 'POST',
        ':path': path,
        'content-type': 'application/grpc',
        te: 'trailers',
        ...(grpcTimeout === null ? {} : { 'grpc-timeout': grpcTimeout ?? `${timeoutMs}m` }),
      });
      const timer = setTimeout(() => {
        stream.close(http2.constants.NGHTTP2_CANCEL);
        finish({ grpcStatus: HANG, message: `no status within ${timeoutMs} ms`, body: Buffer.alloc(0) });
      }, timeoutMs + 2000);
      const take = (headers: http2.IncomingHttpHeaders) => {
        if (headers['grpc-status'] !== undefined) status = Number(headers['grpc-status']);
        if (typeof headers['grpc-message'] === 'string') message = decodeURIComponent(headers['grpc-message']);
      };
      stream.on('response', take);
      stream.on('trailers', take);
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('error', (e) => finish({ grpcStatus: RESET, message: String(e), body: Buffer.alloc(0) }));
      stream.on('close', () => {
        const body = Buffer.concat(chunks);
        finish(
          status === undefined
            ? { grpcStatus: RESET, message: `stream closed without grpc-status (rst ${stream.rstCode})`, body }
            : { grpcStatus: status, message, body: body.subarray(5) },
        );
      });
      stream.end(payload);
    });
  }

  close(): void {
    this.session.close();
  }
}

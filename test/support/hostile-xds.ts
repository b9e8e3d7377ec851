/**
 * Broken and hostile xDS peers for the tests, on 127.0.0.1 and a given port:
 * - startAnsweringXds: an HTTP/2 gRPC server that answers every DiscoveryRequest on the ADS stream with the bytes
 *   `reply` gives (garbage that is not a DiscoveryResponse, say), and counts the requests;
 * - startHoldingProxy: a TCP proxy in front of a real server that, once told to `hold`, stops forwarding on the
 *   connections it has (in both directions, HTTP/2 pings included) while keeping them open, as a stuck proxy or a
 *   half-dead middlebox does; connections opened after that are forwarded again.
 */
import { createServer as createHttp2Server, type ServerHttp2Stream } from 'node:http2';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { grpcFrame } from './raw-h2.js';

const ADS_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';

export interface AnsweringXds {
  /** DiscoveryRequests received so far, with when each arrived (ms, performance.now()). */
  readonly requests: { readonly at: number; readonly bytes: Buffer }[];
  close(): Promise<void>;
}

export async function startAnsweringXds(port: number, reply: (n: number) => Buffer): Promise<AnsweringXds> {
  const requests: { at: number; bytes: Buffer }[] = [];
  const streams = new Set<ServerHttp2Stream>();
  const server = createHttp2Server();
  server.on('stream', (stream, headers) => {
    if (headers[':path'] !== ADS_PATH) {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12' }, { endStream: true });
      return;
    }
    streams.add(stream);
    stream.on('close', () => streams.delete(stream));
    stream.on('error', () => streams.delete(stream));
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
    let buf = Buffer.alloc(0);
    stream.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
        const len = buf.readUInt32BE(1);
        requests.push({ at: performance.now(), bytes: buf.subarray(5, 5 + len) });
        buf = buf.subarray(5 + len);
        if (!stream.closed) stream.write(grpcFrame(reply(requests.length)));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of streams) s.close();
        server.close(() => resolve());
      }),
  };
}

export interface HoldingProxy {
  /** Connections accepted so far. */
  readonly connections: () => number;
  /** Stops forwarding on every connection open now; they stay open. */
  hold(): void;
  close(): Promise<void>;
}

export async function startHoldingProxy(port: number, target: { host: string; port: number }): Promise<HoldingProxy> {
  const open = new Set<{ client: Socket; upstream: Socket; held: boolean }>();
  let accepted = 0;
  const server: Server = createServer((client) => {
    accepted++;
    const upstream = connect(target.port, target.host);
    const pair = { client, upstream, held: false };
    open.add(pair);
    const forward = (from: Socket, to: Socket) =>
      from.on('data', (chunk: Buffer) => {
        if (!pair.held) to.write(chunk);
      });
    forward(client, upstream);
    forward(upstream, client);
    const drop = () => {
      open.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', drop).on('error', drop);
    upstream.on('close', drop).on('error', drop);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    connections: () => accepted,
    hold: () => {
      for (const p of open) p.held = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const p of open) {
          p.client.destroy();
          p.upstream.destroy();
        }
        server.close(() => resolve());
      }),
  };
}

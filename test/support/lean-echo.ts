/**
 * A lean gRPC server with one echo route, and a frame-level client to it (h2-frames.ts), for tests that watch
 * a connection's GOAWAYs and PINGs: `leanEchoContext()` makes a test PKI for the file, and closes the server and
 * the client each test left open.
 */
import * as grpc from '@grpc/grpc-js';
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { ConnectionGuard } from '../../src/server/grpc/guard/connection-guard.js';
import type { ConnectionAgeOptions } from '../../src/server/grpc/lean/connection-age.js';
import { Code } from '../../src/server/grpc/lean/grpc-wire.js';
import { startLeanServer, type RunningLeanServer } from '../../src/server/grpc/lean/lean-server.js';
import { routeTable } from '../../src/server/grpc/lean/routes.js';
import { FrameClient } from './h2-frames.js';
import { makeTestPki, type TestPki } from './tls.js';

export const ECHO = '/t.T/Echo';

export interface LeanEchoContext {
  /** The file's PKI (set before the first test). */
  readonly pki: TestPki;
  /**
   * Starts the echo server on a free port of 127.0.0.1 (or `host`, e.g. `unix:/path`), over TLS when `secure`;
   * closed after the test unless it closed.
   */
  serve(secure: boolean, maxConnectionAge?: ConnectionAgeOptions, host?: string, guard?: ConnectionGuard): Promise<RunningLeanServer>;
  /** A frame-level client to it (a port, or a Unix socket's path), closed after the test. */
  connect(to: number | string, secure: boolean): Promise<FrameClient>;
}

export function leanEchoContext(): LeanEchoContext {
  let pki: TestPki | undefined;
  const servers: RunningLeanServer[] = [];
  const clients: FrameClient[] = [];
  beforeAll(async () => {
    pki = await makeTestPki();
  });
  afterAll(() => pki?.remove());
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    for (const s of servers.splice(0)) await s.close(100);
  });
  const context: LeanEchoContext = {
    get pki() {
      if (pki === undefined) throw new Error('the PKI is made before the first test');
      return pki;
    },
    async serve(secure, maxConnectionAge, host = '127.0.0.1', guard) {
      const routes = routeTable();
      routes.unary.set(ECHO, (bytes) => Promise.resolve(Buffer.from(bytes)));
      const keys = secure ? [{ private_key: readFileSync(context.pki.serverKey), cert_chain: readFileSync(context.pki.serverCert) }] : [];
      const server = await startLeanServer({
        host,
        port: 0,
        routes,
        hooks: { maxMessageBytes: 1024, toStatus: (err) => ({ code: Code.INTERNAL, details: String(err) }), onFinished: () => undefined },
        ...(maxConnectionAge ? { maxConnectionAge } : {}),
        ...(guard ? { guard } : {}),
        ...(secure ? { credentials: grpc.ServerCredentials.createSsl(null, keys) } : {}),
      });
      servers.push(server);
      return server;
    },
    async connect(to, secure) {
      const client = await FrameClient.connect(to, secure ? { tls: { ca: readFileSync(context.pki.caCert), servername: context.pki.serverName } } : {});
      clients.push(client);
      return client;
    },
  };
  return context;
}

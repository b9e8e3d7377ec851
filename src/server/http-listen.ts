/** Listening and closing for the service's small HTTP servers (admin, debug, Prometheus), in one place. */
import type * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HttpListener {
  readonly port: number;
  /** Stops accepting, drops idle and open connections, resolves once closed. */
  close(): Promise<void>;
}

/** Starts `server` on host:port (0 picks a free port); rejects with the listen error (e.g. EADDRINUSE). */
export async function listenHttp(server: http.Server, host: string, port: number): Promise<HttpListener> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Listening and closing for the service's small HTTP servers (admin, debug, Prometheus), in one place. */
import type * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HttpListener {
  readonly port: number;
  /** Stops accepting, drops idle and open connections, resolves once closed. */
  close(): Promise<void>;
}

/**
 * Starts `server` on host:port (0 picks a free port); rejects with the listen error (e.g. EADDRINUSE). Errors
 * the server reports once listening go to `onError` (they used to land on the spent listen promise, unseen).
 */
export async function listenHttp(server: http.Server, host: string, port: number, onError?: (err: unknown) => void): Promise<HttpListener> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err) => onError?.(err));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

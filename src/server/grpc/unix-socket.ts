/**
 * Unix domain socket listening (GRPC_HOST=unix:/path): the sidecar case, where Envoy in the same pod dials
 * a `pipe` address and no TCP port is exposed at all.
 *
 * A socket file left by a process that died (SIGKILL, OOM) would make the bind fail with EADDRINUSE, so
 * before binding: a missing path is fine; a socket nobody answers on is stale and removed; a socket someone
 * answers on, or a path that is not a socket, is an error (we never delete another live server's socket or
 * a regular file). After binding, the file gets the configured mode (e.g. 0660: owner and group may
 * connect), since its default follows the process umask.
 */
import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import { createConnection } from 'node:net';

/** `unix:/abs/path`, `unix:///abs/path` or `unix:rel/path` → the path; undefined when not a unix: address. */
export function unixSocketPath(host: string): string | undefined {
  if (!host.startsWith('unix:')) return undefined;
  const rest = host.slice('unix:'.length);
  return rest.startsWith('//') ? rest.slice(2) : rest;
}

function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ path });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Makes `path` bindable: removes a stale socket; throws for a live one or a non-socket file. */
export async function prepareSocketPath(path: string): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new Error(`cannot inspect ${path}: ${(err as Error).message}`);
  }
  if (!isSocket) throw new Error(`${path} exists and is not a socket; refusing to replace it`);
  if (await answers(path)) throw new Error(`another process is listening on ${path}`);
  unlinkSync(path);
}

/** Sets the socket file's permissions after the bind. */
export function setSocketMode(path: string, mode: number): void {
  chmodSync(path, mode);
}

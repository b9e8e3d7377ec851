/**
 * HTTP client → real Envoy → recording upstream, with the service (in-process, fake clock, memory or a real
 * redis-server) answering Envoy's rate-limit calls: one stack per test file, built from the helpers in
 * envoy.ts, envoy-config.ts and envoy-upstream.ts. Also the two views of the same calls that must agree:
 * Envoy's `cluster.<c>.ratelimit.*` counters and the service's decision metrics.
 */
import type { Settings } from '../../src/settings/settings.js';
import type { EnvoyAddress } from './envoy-config.js';
import { startEnvoy, type EnvoyOptions, type EnvoyProcess } from './envoy.js';
import { startRlsRecorder, type RlsRecorder } from './envoy-recorder.js';
import { startUpstream, type Upstream, type UpstreamHandler } from './envoy-upstream.js';
import { startRedis, type RedisServer } from './redis.js';
import { scrapeMetrics, total } from './scrape.js';
import { startTestService, type TestService } from './service.js';

export type Backend = 'memory' | 'redis';

export interface StackOptions {
  rules: Record<string, string>;
  backend: Backend;
  settings?: Partial<Settings>;
  /** The Envoy config, given where the service and the upstream listen. */
  config: (peers: { service: EnvoyAddress; upstream: EnvoyAddress }) => object;
  envoy?: EnvoyOptions;
  /** The listener clients talk to (default `ingress`). */
  listener?: string;
  /** How the upstream answers (default: 200 with a JSON echo). */
  upstream?: UpstreamHandler;
  /** Put a recording hop (envoy-recorder.ts) between Envoy and the service. */
  record?: boolean;
}

export interface EnvoyStack {
  readonly envoy: EnvoyProcess;
  readonly upstream: Upstream;
  readonly service: TestService;
  readonly redis: RedisServer | undefined;
  /** The calls Envoy made, when started with `record`. */
  readonly recorder: RlsRecorder | undefined;
  /** `http://127.0.0.1:<port>` of the listener. */
  readonly url: string;
  close(): Promise<void>;
}

export async function startEnvoyStack(o: StackOptions): Promise<EnvoyStack> {
  const closers: (() => Promise<void>)[] = [];
  const close = async (): Promise<void> => {
    for (const c of closers.reverse()) await c();
  };
  try {
    const redis = o.backend === 'redis' ? await startRedis() : undefined;
    if (redis) closers.push(() => redis.stop());
    const service = await startTestService(o.rules, { ...(redis ? { backend: 'redis', redisUrl: redis.url } : {}), ...o.settings });
    closers.push(() => service.close());
    const upstream = await startUpstream(o.upstream);
    closers.push(() => upstream.close());
    const recorder = o.record ? await startRlsRecorder(service.grpcAddress) : undefined;
    if (recorder) closers.push(() => recorder.close());
    const [host, port] = service.grpcAddress.split(':') as [string, string];
    const serviceAddress = recorder ? { address: '127.0.0.1', port: recorder.port } : { address: host, port: Number(port) };
    const envoy = await startEnvoy(o.config({ service: serviceAddress, upstream: { address: '127.0.0.1', port: upstream.port } }), o.envoy);
    closers.push(() => envoy.stop());
    const url = await envoy.listenerUrl(o.listener ?? 'ingress');
    return { envoy, upstream, service, redis, recorder, url, close };
  } catch (error) {
    await close();
    throw error;
  }
}

export interface RlsCounts {
  ok: number;
  overLimit: number;
  error: number;
  failureModeAllowed: number;
}

/** Envoy's rate-limit filter counters for routes to `cluster` (the route's cluster, not the rate-limit cluster). */
export async function envoyRlsCounts(envoy: EnvoyProcess, cluster: string): Promise<RlsCounts> {
  const s = await envoy.stats(`^cluster\\.${cluster}\\.ratelimit\\.`);
  const get = (n: string): number => s.get(`cluster.${cluster}.ratelimit.${n}`) ?? 0;
  return { ok: get('ok'), overLimit: get('over_limit'), error: get('error'), failureModeAllowed: get('failure_mode_allowed') };
}

/**
 * The service's side: decisions by overall code (all domains); `error`: gRPC errors and late answers;
 * `failureModeAllowed`: decisions the service made by FAILURE_MODE because the store could not answer in time.
 */
export async function serviceRlsCounts(service: TestService): Promise<RlsCounts> {
  const samples = await scrapeMetrics(service.httpBase.replace('http://', ''));
  let ok = 0;
  let overLimit = 0;
  let error = 0;
  for (const [key, value] of samples) {
    if (key.startsWith('ratelimit_decisions_total{')) {
      if (key.includes('code="OK"')) ok += value;
      else if (key.includes('code="OVER_LIMIT"')) overLimit += value;
    }
    if (key.startsWith('ratelimit_grpc_errors_total{') || key.startsWith('ratelimit_grpc_late_answers_total{')) error += value;
  }
  return { ok, overLimit, error, failureModeAllowed: total(samples, 'ratelimit_store_fallbacks_total') };
}

export function minus(a: RlsCounts, b: RlsCounts): RlsCounts {
  return { ok: a.ok - b.ok, overLimit: a.overLimit - b.overLimit, error: a.error - b.error, failureModeAllowed: a.failureModeAllowed - b.failureModeAllowed };
}

/**
 * Sends `request` until Envoy counts one rate-limit answer as ok (at most 20 tries): the first call after Envoy
 * starts also opens its HTTP/2 connection to the service, inside the filter's timeout.
 */
export async function warmUp(stack: EnvoyStack, cluster: string, request: () => Promise<Response>): Promise<void> {
  for (let i = 0; i < 20; i++) {
    await (await request()).arrayBuffer();
    if ((await envoyRlsCounts(stack.envoy, cluster)).ok > 0) return;
  }
  throw new Error(`no rate-limit call succeeded through Envoy in 20 tries:\n${stack.envoy.logs()}`);
}

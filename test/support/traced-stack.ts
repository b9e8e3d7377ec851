/**
 * A traced request path for the tracing tests: client → real Envoy (its OpenTelemetry tracer exporting to Jaeger
 * over OTLP/gRPC) → a rate-limit service → upstream, where the service is this one (`ratelimit serve`, its own
 * process) or envoyproxy/ratelimit, each on a Redis of its own and started with the same tracing environment.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rlsBootstrap } from './envoy-bootstrap.js';
import { startEnvoy, type EnvoyProcess } from './envoy.js';
import { startUpstream } from './envoy-upstream.js';
import { eventually } from './eventually.js';
import { freePort, startRedis } from './redis.js';
import { spawnService } from './service-process.js';
import { REFERENCE_BIN, referenceEnv } from './xds-subjects.js';

type Obj = Record<string, unknown>;

export const TRACED_DOMAIN = 'traced';
export const TRACED_RULES = `domain: ${TRACED_DOMAIN}
descriptors:
  - key: generic_key
    value: slow
    rate_limit: {unit: minute, requests_per_unit: 2}
`;

export interface TracedSubject {
  readonly grpcAddress: string;
  /** host:port of the HTTP port (POST /json). */
  readonly httpAddress: string;
  readonly log: () => string;
  stop(): Promise<void>;
}

/** This service, as a pod runs it, on Redis. */
export async function startOursTraced(env: Record<string, string>): Promise<TracedSubject> {
  const redis = await startRedis();
  const dir = mkdtempSync(join(tmpdir(), 'rl-traced-'));
  writeFileSync(join(dir, 'traced.yaml'), TRACED_RULES);
  const svc = await spawnService({ CONFIG_DIR: dir, BACKEND: 'redis', REDIS_URL: redis.url, ...env }).catch(async (err: unknown) => {
    await redis.stop();
    throw err;
  });
  return {
    grpcAddress: svc.grpcAddress,
    httpAddress: svc.httpAddress,
    log: () => svc.stderr(),
    stop: async () => {
      await svc.stop();
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** envoyproxy/ratelimit with its rules from a runtime directory, on Redis; ready when /healthcheck answers. */
export async function startReferenceTraced(env: Record<string, string>): Promise<TracedSubject> {
  const redis = await startRedis();
  const root = mkdtempSync(join(tmpdir(), 'rl-traced-ref-'));
  const configDir = join(root, 'ratelimit', 'config');
  mkdirSync(configDir, { recursive: true });
  writeFileSync(join(configDir, 'traced.yaml'), TRACED_RULES);
  const [grpc, http, debug] = [await freePort(), await freePort(), await freePort()];
  let out = '';
  const child = spawn(REFERENCE_BIN, [], {
    env: {
      ...referenceEnv(redis.port, grpc, http, debug),
      RUNTIME_ROOT: root,
      RUNTIME_SUBDIRECTORY: 'ratelimit',
      RUNTIME_APPDIRECTORY: 'config',
      RUNTIME_WATCH_ROOT: 'false',
      RUNTIME_IGNOREDOTFILES: 'true',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr.on('data', (c: Buffer) => void (out = (out + c.toString()).slice(-200_000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
    await redis.stop();
    rmSync(root, { recursive: true, force: true });
  };
  try {
    await eventually(async () => child.exitCode === null && (await fetch(`http://127.0.0.1:${http}/healthcheck`)).ok, {
      timeoutMs: 20_000,
      intervalMs: 100,
      what: 'envoyproxy/ratelimit',
    });
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}\n${out}`);
  }
  return { grpcAddress: `127.0.0.1:${grpc}`, httpAddress: `127.0.0.1:${http}`, log: () => out, stop };
}

/** rlsBootstrap's Envoy with its OpenTelemetry tracer (every request sampled) sending to `collector` over OTLP/gRPC. */
export function tracedEnvoyConfig(service: string, upstreamPort: number, collector: string, serviceName: string): Obj {
  const [host, port] = service.split(':') as [string, string];
  const doc = rlsBootstrap({
    service: { address: host, port: Number(port) },
    upstream: { address: '127.0.0.1', port: upstreamPort },
    domain: TRACED_DOMAIN,
    routes: [{ prefix: '/', rateLimits: [{ actions: [{ generic_key: { descriptor_value: 'slow' } }] }] }],
  }) as { static_resources: { listeners: Obj[]; clusters: Obj[] } } & Obj;
  const hcm = ((doc.static_resources.listeners[0]!.filter_chains as Obj[])[0]!.filters as Obj[])[0]!.typed_config as Obj;
  hcm.tracing = {
    random_sampling: { value: 100 },
    provider: {
      name: 'envoy.tracers.opentelemetry',
      typed_config: {
        '@type': 'type.googleapis.com/envoy.config.trace.v3.OpenTelemetryConfig',
        grpc_service: { envoy_grpc: { cluster_name: 'otlp' }, timeout: '2s' },
        service_name: serviceName,
      },
    },
  };
  const [cHost, cPort] = collector.split(':') as [string, string];
  doc.static_resources.clusters.push({
    name: 'otlp',
    type: 'STATIC',
    connect_timeout: '1s',
    typed_extension_protocol_options: {
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
        '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
        explicit_http_config: { http2_protocol_options: {} },
      },
    },
    load_assignment: {
      cluster_name: 'otlp',
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: cHost, port_value: Number(cPort) } } } }] }],
    },
  });
  // Envoy sends its spans once 5 are pending or every 5 s: one span is enough here.
  doc.layered_runtime = { layers: [{ name: 'static', static_layer: { 'tracing.opentelemetry.min_flush_spans': 1 } }] };
  return doc;
}

export interface TracedPath {
  readonly envoy: EnvoyProcess;
  readonly url: string;
  close(): Promise<void>;
}

/** Envoy and an upstream in front of `service` (host:port). */
export async function startTracedPath(service: string, collector: string, serviceName: string): Promise<TracedPath> {
  const upstream = await startUpstream();
  try {
    const envoy = await startEnvoy(tracedEnvoyConfig(service, upstream.port, collector, serviceName));
    const url = await envoy.listenerUrl('ingress');
    return {
      envoy,
      url,
      close: async () => {
        await envoy.stop();
        await upstream.close();
      },
    };
  } catch (err) {
    await upstream.close();
    throw err;
  }
}

/** A W3C traceparent of a new, sampled trace: [header, trace id, parent span id]. */
export function newTraceparent(): [string, string, string] {
  const hex = (n: number) => [...crypto.getRandomValues(new Uint8Array(n))].map((b) => b.toString(16).padStart(2, '0')).join('');
  const traceId = hex(16);
  const spanId = hex(8);
  return [`00-${traceId}-${spanId}-01`, traceId, spanId];
}

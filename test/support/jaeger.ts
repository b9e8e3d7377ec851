/**
 * A real Jaeger (v1.76.0's `cmd/jaeger`, built by go-tools.ts) as the tests' trace collector: OTLP in over gRPC and
 * HTTP, traces in memory, the query API out; every port free and on 127.0.0.1, from a config file of its own.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from './eventually.js';
import { goTool } from './go-tools.js';
import { freePort } from './redis.js';

export interface JaegerSpan {
  readonly traceID: string;
  readonly spanID: string;
  readonly operationName: string;
  readonly references: readonly { refType: string; traceID: string; spanID: string }[];
  readonly tags: readonly { key: string; type: string; value: unknown }[];
  readonly processID: string;
  readonly startTime: number;
  readonly duration: number;
}

export interface JaegerTrace {
  readonly traceID: string;
  readonly spans: readonly JaegerSpan[];
  readonly processes: Readonly<Record<string, { serviceName: string; tags: readonly { key: string; value: unknown }[] }>>;
}

export interface Jaeger {
  /** host:port of the OTLP/gRPC receiver. */
  readonly otlpGrpc: string;
  /** host:port of the OTLP/HTTP receiver. */
  readonly otlpHttp: string;
  /** http://host:port of the query API. */
  readonly queryUrl: string;
  /** The trace as the query API gives it, once it holds at least `minSpans` spans (waits up to 20 s). */
  trace(traceId: string, minSpans: number): Promise<JaegerTrace>;
  logs(): string;
  stop(): Promise<void>;
}

function config(p: { grpc: number; http: number; query: number; queryGrpc: number; health: number }): string {
  return `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:${p.health}
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:${p.query}
    grpc:
      endpoint: 127.0.0.1:${p.queryGrpc}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:${p.grpc}
      http:
        endpoint: 127.0.0.1:${p.http}
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`;
}

export async function startJaeger(): Promise<Jaeger> {
  const bin = goTool('jaeger');
  const ports = { grpc: await freePort(), http: await freePort(), query: await freePort(), queryGrpc: await freePort(), health: await freePort() };
  const dir = mkdtempSync(join(tmpdir(), 'rl-jaeger-'));
  const file = join(dir, 'jaeger.yaml');
  writeFileSync(file, config(ports));
  let out = '';
  const child: ChildProcess = spawn(bin, ['--config', file], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  const append = (c: Buffer) => void (out = (out + c.toString()).slice(-100_000));
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  const queryUrl = `http://127.0.0.1:${ports.query}`;
  try {
    await eventually(async () => child.exitCode === null && (await fetch(`${queryUrl}/api/services`)).ok, {
      timeoutMs: 30_000,
      intervalMs: 100,
      what: 'Jaeger',
    });
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}\n${out}`);
  }
  return {
    otlpGrpc: `127.0.0.1:${ports.grpc}`,
    otlpHttp: `127.0.0.1:${ports.http}`,
    queryUrl,
    async trace(traceId, minSpans) {
      let found: JaegerTrace | undefined;
      await eventually(
        async () => {
          const res = await fetch(`${queryUrl}/api/traces/${traceId}`);
          if (!res.ok) return false;
          const body = (await res.json()) as { data?: JaegerTrace[] };
          found = body.data?.[0];
          return found !== undefined && found.spans.length >= minSpans;
        },
        { timeoutMs: 20_000, intervalMs: 200, what: `trace ${traceId} with ${minSpans} spans in Jaeger` },
      ).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}; found: ${JSON.stringify(found?.spans.map((s) => s.operationName))}`);
      });
      return found!;
    },
    logs: () => out,
    stop,
  };
}

/** The value of a span's tag, undefined when it has none. */
export function tag(span: JaegerSpan, key: string): unknown {
  return span.tags.find((t) => t.key === key)?.value;
}

/** The span's parent span id (its CHILD_OF reference), undefined for a root. */
export function parentOf(span: JaegerSpan): string | undefined {
  return span.references.find((r) => r.refType === 'CHILD_OF')?.spanID;
}

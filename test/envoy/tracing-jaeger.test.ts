/**
 * Tracing through the real thing: a client request with a W3C traceparent → Envoy 1.40 (OpenTelemetry tracer,
 * exporting to Jaeger over OTLP/gRPC) → the rate-limit service (exporting to the same Jaeger over OTLP/HTTP or
 * OTLP/gRPC). The service's span must be in the client's trace, a child of Envoy's span for the rate-limit call,
 * with the domain, descriptor count, overall code and deciding rule, and its Redis call as its own child. The
 * same scenario runs against envoyproxy/ratelimit started with the same environment, side by side.
 */
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthzTestClient, envoyCheckRequest } from '../support/authz-client.js';
import { describeEnvoy } from '../support/envoy.js';
import { parentOf, startJaeger, tag, type Jaeger, type JaegerSpan, type JaegerTrace } from '../support/jaeger.js';
import { newTraceparent, startOursTraced, startReferenceTraced, startTracedPath, type TracedPath, type TracedSubject } from '../support/traced-stack.js';

const RLS_SPAN = 'envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

function tracingEnv(jaeger: Jaeger, protocol: 'http' | 'grpc', name: string): Record<string, string> {
  return {
    TRACING_ENABLED: 'true',
    TRACING_EXPORTER_PROTOCOL: protocol,
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://${protocol === 'grpc' ? jaeger.otlpGrpc : jaeger.otlpHttp}`,
    TRACING_SERVICE_NAME: name,
    TRACING_SERVICE_NAMESPACE: 'edge',
    TRACING_SERVICE_INSTANCE_ID: `${name}-0`,
    TRACING_SAMPLING_RATE: '1',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  };
}

async function traced(path: TracedPath): Promise<{ status: number; traceId: string; clientSpan: string }> {
  const [traceparent, traceId, clientSpan] = newTraceparent();
  const res = await fetch(path.url, { headers: { traceparent } });
  await res.arrayBuffer();
  return { status: res.status, traceId, clientSpan };
}

function serviceOf(trace: JaegerTrace, span: JaegerSpan): string {
  return trace.processes[span.processID]!.serviceName;
}

/** The service's span for the call and the Envoy span it hangs under. */
function rlsSpans(trace: JaegerTrace, service: string) {
  const ours = trace.spans.filter((s) => serviceOf(trace, s) === service);
  const server = ours.find((s) => s.operationName === RLS_SPAN);
  const parent = server && trace.spans.find((s) => s.spanID === parentOf(server));
  return { ours, server, parent };
}

describeEnvoy('tracing: the service span under Envoy in a real Jaeger', () => {
  let jaeger: Jaeger;
  beforeAll(async () => {
    jaeger = await startJaeger();
  }, 120_000);
  afterAll(async () => jaeger?.stop());

  for (const protocol of ['http', 'grpc'] as const) {
    describe(`this service, OTLP/${protocol === 'http' ? 'HTTP' : 'gRPC'}`, () => {
      let subject: TracedSubject;
      let path: TracedPath;
      const name = `ratelimit-ours-${protocol}`;
      beforeAll(async () => {
        subject = await startOursTraced(tracingEnv(jaeger, protocol, name));
        path = await startTracedPath(subject.grpcAddress, jaeger.otlpGrpc, 'envoy-ingress');
      }, 120_000);
      afterAll(async () => {
        await path?.close();
        await subject?.stop();
      });

      it('puts the decision span in the client trace, under the span Envoy made for the rate-limit call', async () => {
        const { status, traceId } = await traced(path);
        expect(status).toBe(200);
        const trace = await jaeger.trace(traceId, 4);
        const { ours, server, parent } = rlsSpans(trace, name);
        expect(server, JSON.stringify(trace.spans.map((s) => [s.operationName, serviceOf(trace, s)]))).toBeDefined();
        expect(parent && serviceOf(trace, parent)).toBe('envoy-ingress');
        expect(tag(server!, 'domain')).toBe('traced');
        expect(tag(server!, 'ratelimit.descriptors')).toBe(1);
        expect(tag(server!, 'ratelimit.overall_code')).toBe('OK');
        expect(tag(server!, 'rpc.grpc.status_code')).toBe(0);
        expect(tag(server!, 'span.kind')).toBe('server');
        const redis = ours.find((s) => s.operationName === 'Redis Pipeline Execution');
        expect(redis && parentOf(redis)).toBe(server!.spanID);
        expect(tag(redis!, 'ratelimit.checks')).toBe(1);
        if (process.env.TRACING_DOC_TRACE && protocol === 'http') writeFileSync(process.env.TRACING_DOC_TRACE, JSON.stringify(trace, null, 2));
        const proc = trace.processes[server!.processID]!;
        const resource = Object.fromEntries(proc.tags.map((t) => [t.key, t.value]));
        expect(resource).toMatchObject({ 'service.namespace': 'edge', 'service.instance.id': `${name}-0` });
      }, 60_000);

      it('names the rule that rejected an over-limit request', async () => {
        await traced(path);
        await traced(path);
        const { status, traceId } = await traced(path);
        expect(status).toBe(429);
        const { server } = rlsSpans(await jaeger.trace(traceId, 4), name);
        expect(tag(server!, 'ratelimit.overall_code')).toBe('OVER_LIMIT');
        expect(tag(server!, 'ratelimit.over_limit.rules')).toMatch(/traced\.generic_key_slow/);
      }, 60_000);

      it('traces ext_authz Check under a W3C parent and POST /json under a B3 parent', async () => {
        const [traceparent, checkTrace, checkParent] = newTraceparent();
        const client = new AuthzTestClient(subject.grpcAddress);
        try {
          await client.send(envoyCheckRequest({ contextExtensions: { ratelimit_domain: 'traced' } }), 5000, { traceparent });
        } finally {
          client.close();
        }
        const check = (await jaeger.trace(checkTrace, 1)).spans.find((s) => s.operationName === 'envoy.service.auth.v3.Authorization/Check')!;
        expect(parentOf(check)).toBe(checkParent);
        expect(tag(check, 'ratelimit.authz.result')).toBe('no_descriptors');

        const [, jsonTrace, jsonParent] = newTraceparent();
        const b3 = { 'x-b3-traceid': jsonTrace, 'x-b3-spanid': jsonParent, 'x-b3-sampled': '1' };
        const body = JSON.stringify({ domain: 'traced', descriptors: [{ entries: [{ key: 'generic_key', value: 'slow' }] }] });
        const res = await fetch(`http://${subject.httpAddress}/json`, { method: 'POST', headers: b3, body });
        await res.arrayBuffer();
        const json = (await jaeger.trace(jsonTrace, 2)).spans.find((s) => s.operationName === 'POST /json')!;
        expect(parentOf(json)).toBe(jsonParent);
        expect(tag(json, 'http.response.status_code')).toBe(res.status);
        expect(tag(json, 'domain')).toBe('traced');
      }, 60_000);
    });
  }

  describe('envoyproxy/ratelimit with the same environment (side by side)', () => {
    let subject: TracedSubject;
    let path: TracedPath;
    const name = 'ratelimit-reference';
    beforeAll(async () => {
      subject = await startReferenceTraced(tracingEnv(jaeger, 'http', name));
      path = await startTracedPath(subject.grpcAddress, jaeger.otlpGrpc, 'envoy-ingress-ref');
    }, 120_000);
    afterAll(async () => {
      await path?.close();
      await subject?.stop();
    });

    it('puts its spans under the same Envoy span, with the names this service keeps', async () => {
      const { status, traceId } = await traced(path);
      expect(status).toBe(200);
      const trace = await jaeger.trace(traceId, 5);
      const { ours, server, parent } = rlsSpans(trace, name);
      expect(parent && serviceOf(trace, parent)).toBe('envoy-ingress-ref');
      expect(tag(server!, 'rpc.system')).toBe('grpc');
      const names = ours.map((s) => s.operationName).sort();
      // Its extra "ShouldRateLimit Execution" span carries the domain and the whole request as text; this
      // service puts the domain on the call's own span (docs/switching.md).
      expect(names).toEqual([RLS_SPAN, 'Redis Pipeline Execution', 'ShouldRateLimit Execution'].sort());
      const execution = ours.find((s) => s.operationName === 'ShouldRateLimit Execution')!;
      expect(tag(execution, 'domain')).toBe('traced');
      const redis = ours.find((s) => s.operationName === 'Redis Pipeline Execution')!;
      // Its Redis commands: INCRBY and EXPIRE for the one limit (this service: one script call, `ratelimit.checks` 1).
      expect(tag(redis, 'pipeline length')).toBe(2);
    }, 60_000);
  });
});

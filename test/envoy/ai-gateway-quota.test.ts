/**
 * The rate-limit service of Envoy AI Gateway's QuotaPolicy (docs/ai-gateway.md), end to end: rules over xDS from
 * a go-control-plane server (test/xds-server/) for node `envoy-ai-gateway-ratelimit`, shaped as the AI Gateway's
 * translator writes them (domain `ai-gateway-quota`, backend_name → model_name_override with quota_mode), and a
 * real Envoy 1.40 configured as the AI Gateway's extension server configures it: a rate-limit filter named
 * `envoy.filters.http.ratelimit/ai-gateway-quota`, a per-route request-time entry (generic keys, 1 hit) and a
 * stream-done entry reading the backend, the model and the charge from dynamic metadata in `io.envoy.ai_gateway`
 * (`%DYNAMIC_METADATA(io.envoy.ai_gateway:quota_cost)%`, apply_on_stream_done). Here the metadata the AI
 * Gateway's ext_proc writes comes from set_metadata and header_to_metadata (the upstream reports the cost in a
 * response header). The charge after the response that crosses the quota is counted, so the next request gets
 * 429; with a Distinct selector the charges land on one counter apart from the per-user checks, as the AI
 * Gateway writes the entries. Run the same on this service and on envoyproxy/ratelimit.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rlsBootstrap } from '../support/envoy-bootstrap.js';
import { startEnvoy, describeEnvoy, type EnvoyProcess } from '../support/envoy.js';
import { startRlsRecorder, type RecordedCall, type RlsRecorder } from '../support/envoy-recorder.js';
import { startUpstream, type Upstream } from '../support/envoy-upstream.js';
import { eventually } from '../support/eventually.js';
import { freePort } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { startXdsServer, type XdsServer } from '../support/xds-server.js';
import { REFERENCE_BIN, startOursOverXds, startReferenceOverXds, type XdsSubject } from '../support/xds-subjects.js';

const NODE = 'envoy-ai-gateway-ratelimit';
const DOMAIN = 'ai-gateway-quota';
const NS = 'io.envoy.ai_gateway';
const BACKEND = 'default/llm-backend';
const MODEL = 'gpt-test';
const FILTER = 'envoy.filters.http.ratelimit/ai-gateway-quota';
const DISTINCT_MODEL = 'gpt-distinct';
const USER_KEY = 'rule-0-x-user-id-match-0';

/** What the AI Gateway's translator sends for a QuotaPolicy with a default bucket of 100 per hour for one model. */
const QUOTA = {
  name: DOMAIN,
  domain: DOMAIN,
  descriptors: [
    {
      key: 'backend_name',
      value: BACKEND,
      descriptors: [
        { key: 'model_name_override', value: MODEL, rateLimit: { unit: 'HOUR', requestsPerUnit: 100 }, quotaMode: true },
        // A bucket rule with a Distinct selector on x-user-id: key only, each value counts apart.
        {
          key: 'model_name_override',
          value: DISTINCT_MODEL,
          descriptors: [{ key: USER_KEY, rateLimit: { unit: 'HOUR', requestsPerUnit: 100 }, quotaMode: true }],
        },
      ],
    },
  ],
};

const fromMetadata = (descriptorKey: string, key: string) => ({
  metadata: { descriptor_key: descriptorKey, metadata_key: { key: NS, path: [{ key }] }, source: 'DYNAMIC' },
});
const genericKey = (descriptorKey: string, value: string) => ({ generic_key: { descriptor_key: descriptorKey, descriptor_value: value } });

/** The per-route entries the AI Gateway's extension server writes for a model without bucket rules. */
const QUOTA_RATE_LIMITS = [
  { actions: [genericKey('backend_name', BACKEND), genericKey('model_name_override', MODEL)] },
  {
    actions: [fromMetadata('backend_name', 'ai_service_backend_name'), fromMetadata('model_name_override', 'model_name_override')],
    hits_addend: { format: `%DYNAMIC_METADATA(${NS}:quota_cost)%` },
    apply_on_stream_done: true,
  },
];

/**
 * For the Distinct bucket rule: at request time the user's header value; after the response the AI Gateway sends
 * the selector's own name as the value (a generic key: the stream-done entry does not read the header).
 */
const DISTINCT_RATE_LIMITS = [
  {
    actions: [
      genericKey('backend_name', BACKEND),
      genericKey('model_name_override', DISTINCT_MODEL),
      { request_headers: { header_name: 'x-user-id', descriptor_key: USER_KEY } },
    ],
  },
  {
    actions: [
      fromMetadata('backend_name', 'ai_service_backend_name'),
      fromMetadata('model_name_override', 'model_name_override'),
      genericKey(USER_KEY, USER_KEY),
    ],
    hits_addend: { format: `%DYNAMIC_METADATA(${NS}:quota_cost)%` },
    apply_on_stream_done: true,
  },
];

/** In place of the AI Gateway's ext_proc: the backend name, the model (request header) and the cost (response header). */
const METADATA_FILTERS = [
  {
    name: 'envoy.filters.http.set_metadata',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.filters.http.set_metadata.v3.Config',
      metadata: [{ metadata_namespace: NS, value: { ai_service_backend_name: BACKEND } }],
    },
  },
  {
    name: 'envoy.filters.http.header_to_metadata',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.filters.http.header_to_metadata.v3.Config',
      request_rules: [{ header: 'x-ai-eg-model', on_header_present: { metadata_namespace: NS, key: 'model_name_override', type: 'STRING' } }],
      response_rules: [{ header: 'x-quota-cost', on_header_present: { metadata_namespace: NS, key: 'quota_cost', type: 'NUMBER' } }],
    },
  },
];

const subjects: [string, typeof startOursOverXds][] = [['this service', startOursOverXds]];
if (existsSync(REFERENCE_BIN) && process.platform === 'linux' && process.arch === 'x64') subjects.push(['envoyproxy/ratelimit', startReferenceOverXds]);
else console.warn(`envoyproxy/ratelimit is not at ${REFERENCE_BIN}: the quota path runs on this service only`);

describeEnvoy('AI Gateway quota service through Envoy', () => {
  describe.each(subjects)('%s', (_name, start) => {
    let xds: XdsServer;
    let subject: XdsSubject;
    let recorder: RlsRecorder;
    let upstream: Upstream;
    let envoy: EnvoyProcess;
    let url: string;
    beforeAll(async () => {
      const port = await freePort();
      xds = await startXdsServer({ port, node: NODE, snapshot: { version: '1', resources: [QUOTA] } });
      subject = await start({
        CONFIG_TYPE: 'GRPC_XDS_SOTW',
        CONFIG_GRPC_XDS_SERVER_URL: `127.0.0.1:${port}`,
        CONFIG_GRPC_XDS_NODE_ID: NODE,
        FORCE_START_WITHOUT_INITIAL_CONFIG: 'true',
      });
      await xds.waitFor((e) => e.event === 'request' && e.version === '1' && e.nonce !== '', { timeoutMs: 20_000, what: 'the ACK of the quota rules' });
      recorder = await startRlsRecorder(subject.grpcAddress);
      // The upstream reports what the request cost (its x-price header) as the LLM's token count.
      upstream = await startUpstream((req, res) => {
        res.writeHead(200, { 'x-quota-cost': String(req.headers['x-price'] ?? '0') });
        res.end('completion');
      });
      envoy = await startEnvoy(
        rlsBootstrap({
          service: { address: '127.0.0.1', port: recorder.port },
          upstream: { address: '127.0.0.1', port: upstream.port },
          domain: DOMAIN,
          filterName: FILTER,
          filter: { timeout: '5s', disable_x_envoy_ratelimited_header: true },
          before: METADATA_FILTERS,
          routes: [
            { prefix: '/distinct/', perRoute: true, domain: DOMAIN, rateLimits: DISTINCT_RATE_LIMITS },
            { prefix: '/', perRoute: true, domain: DOMAIN, rateLimits: QUOTA_RATE_LIMITS },
          ],
        }),
      );
      url = await envoy.listenerUrl('ingress');
    }, 90_000);
    afterAll(async () => {
      await envoy?.stop();
      await upstream?.close();
      await recorder?.close();
      await subject?.stop();
      await xds?.close();
    });

    const isCharge = (c: RecordedCall, cost: number) => c.request?.descriptors[0]?.hitsAddend === cost;
    /** One chat request; resolves once the service has answered its charge after the response. */
    const chat = async (price: number, distinctUser?: string): Promise<{ status: number; remaining: string | null }> => {
      const from = recorder.calls.length;
      const headers: Record<string, string> =
        distinctUser === undefined ? { 'x-ai-eg-model': MODEL } : { 'x-ai-eg-model': DISTINCT_MODEL, 'x-user-id': distinctUser };
      const res = await fetch(`${url}${distinctUser === undefined ? '' : '/distinct'}/v1/chat/completions`, {
        method: 'POST',
        headers: { ...headers, 'x-price': String(price) },
        body: '{}',
      });
      await res.arrayBuffer();
      if (res.status === 200) {
        await eventually(() => recorder.calls.slice(from).some((c) => isCharge(c, price) && c.answered), {
          timeoutMs: 10_000,
          what: `the charge of ${price} after the response`,
        }).catch((err: unknown) => {
          throw new Error(`${(err as Error).message}\n${envoy.logs().slice(-3000)}\n${subject.log().slice(-2000)}`);
        });
      }
      return { status: res.status, remaining: res.headers.get('x-ratelimit-remaining') };
    };

    it('charges the quota_cost after the response, counts the charge that crosses the quota, and answers the next request 429', async () => {
      // 1 (request time) + 70 (after the response) of 100
      expect(await chat(70)).toEqual({ status: 200, remaining: '99' });
      const charge = recorder.calls.find((c) => isCharge(c, 70))!.request!;
      expect(charge.domain).toBe(DOMAIN);
      expect(charge.descriptors[0]!.entries).toEqual([
        { key: 'backend_name', value: BACKEND },
        { key: 'model_name_override', value: MODEL },
      ]);
      // 72 of 100 at request time; then 45 after the response: 117, past the quota, and counted all the same
      expect(await chat(45)).toEqual({ status: 200, remaining: '28' });
      const third = await chat(1);
      expect(third.status).toBe(429);
    }, 60_000);

    it("with a Distinct selector, counts the charges after the response under the selector's name, apart from the per-user checks", async () => {
      expect(await chat(70, 'u1')).toEqual({ status: 200, remaining: '99' });
      const charge = recorder.calls.find((c) => isCharge(c, 70) && c.request?.descriptors[0]?.entries[1]?.value === DISTINCT_MODEL)!.request!;
      expect(charge.descriptors[0]!.entries[2]).toEqual({ key: USER_KEY, value: USER_KEY });
      // u1's own counter holds only its request-time hits (2 of 100); the 115 tokens sit on the shared one.
      expect(await chat(45, 'u1')).toEqual({ status: 200, remaining: '98' });
      expect((await chat(1, 'u1')).status).toBe(200);
      // The shared counter holds the charges (70 + 45 + 1, past the quota): a request for it is over.
      const client = new RlsTestClient(subject.grpcAddress);
      try {
        const shared = await client.ask(
          DOMAIN,
          [
            [
              ['backend_name', BACKEND],
              ['model_name_override', DISTINCT_MODEL],
              [USER_KEY, USER_KEY],
            ],
          ],
          1,
        );
        expect(shared.overall_code).toBe('OVER_LIMIT');
      } finally {
        client.close();
      }
    }, 60_000);
  });
});

/**
 * Rules over xDS as a client of a real Envoy sees them: the service (CONFIG_TYPE=GRPC_XDS_SOTW,
 * FORCE_START_WITHOUT_INITIAL_CONFIG) behind Envoy's rate-limit filter, fed by the go-control-plane server of the
 * tests: an empty set (no limit), a set with a limit, an update, and an empty set lifting it again.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { rlsBootstrap } from '../support/envoy-bootstrap.js';
import { describeEnvoy } from '../support/envoy.js';
import { startEnvoyStack, type EnvoyStack } from '../support/envoy-stack.js';
import { freePort } from '../support/redis.js';
import { startXdsServer, type XdsEvent, type XdsServer } from '../support/xds-server.js';

const NODE = 'envoy-ratelimit';
const DOMAIN = 'xds-envoy';
const byClient = (perHour: number) => ({
  name: 'route-policy',
  domain: DOMAIN,
  descriptors: [{ key: 'client', rateLimit: { unit: 'HOUR', requestsPerUnit: perHour } }],
});
const ack = (version: string) => (e: XdsEvent) => e.event === 'request' && e.version === version && e.nonce !== '';

describeEnvoy('rules over xDS through Envoy', () => {
  let server: XdsServer;
  let stack: EnvoyStack;
  beforeAll(async () => {
    const port = await freePort();
    stack = await startEnvoyStack({
      backend: 'memory',
      rules: {},
      settings: {
        configType: 'GRPC_XDS_SOTW',
        xdsServerUrl: `127.0.0.1:${port}`,
        xdsNodeId: NODE,
        forceStartWithoutInitialConfig: true,
        xdsBackoffInitialInterval: 100,
        xdsBackoffMaxInterval: 500,
      },
      config: ({ service, upstream }) =>
        rlsBootstrap({
          service,
          upstream,
          domain: DOMAIN,
          routes: [{ prefix: '/', rateLimits: [{ actions: [{ request_headers: { header_name: 'x-client', descriptor_key: 'client' } }] }] }],
        }),
    });
    server = await startXdsServer({ port, node: NODE, snapshot: { version: '0', resources: [] } });
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
    await server?.close();
  });

  const statuses = async (client: string, n: number): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await fetch(`${stack.url}/`, { headers: { 'x-client': client } })).status);
    return out;
  };

  it('limits with the set in force: none, the first, an update, then none again', async () => {
    await server.waitFor(ack('0'), { timeoutMs: 20_000, what: 'the ACK of the empty version 0' });
    expect(await statuses('a', 3)).toEqual([200, 200, 200]);

    let mark = server.events.length;
    server.set('1', [byClient(2)]);
    await server.waitFor(ack('1'), { from: mark, what: 'the ACK of version 1' });
    expect(await statuses('b', 3)).toEqual([200, 200, 429]);

    mark = server.events.length;
    server.set('2', [byClient(1)]);
    await server.waitFor(ack('2'), { from: mark, what: 'the ACK of version 2' });
    expect(await statuses('c', 2)).toEqual([200, 429]);

    mark = server.events.length;
    server.set('3', []);
    await server.waitFor(ack('3'), { from: mark, what: 'the ACK of the empty version 3' });
    expect(await statuses('c', 2)).toEqual([200, 200]);
  }, 60_000);
});

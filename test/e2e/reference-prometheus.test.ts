/**
 * The per-rule counters under envoyproxy/ratelimit's Prometheus names (`ratelimit_service_rate_limit_*` with
 * `domain`, `key1`, `key2`, what Envoy Gateway's global-ratelimit dashboard queries), compared with the reference
 * itself: the same rules (shaped as Envoy Gateway's translator writes them, over xDS from the test's
 * go-control-plane server) and the same requests to both, then both PROMETHEUS_ADDR endpoints scraped and the
 * series of those names compared.
 */
import { existsSync } from 'node:fs';
import { afterAll, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { freePort } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { parseMetrics } from '../support/scrape.js';
import { startXdsServer, type XdsServer } from '../support/xds-server.js';
import { REFERENCE_BIN, startOursOverXds, startReferenceOverXds, type XdsSubject } from '../support/xds-subjects.js';

const NODE = 'envoy-ratelimit';
const DOMAIN = 'default/eg/http';
const ROUTE = 'httproute/default/http-ratelimit/rule/0/match/0/ratelimit_example';
const RULES = {
  name: DOMAIN,
  domain: DOMAIN,
  descriptors: [
    { key: ROUTE, value: ROUTE, descriptors: [{ key: 'rule-0-match-0', value: 'rule-0-match-0', rateLimit: { unit: 'HOUR', requestsPerUnit: 2 } }] },
    { key: 'flat', rateLimit: { unit: 'HOUR', requestsPerUnit: 1 } },
  ],
};
const NAMES = ['total_hits', 'over_limit', 'near_limit', 'within_limit'].map((s) => `ratelimit_service_rate_limit_${s}`);

const canRun = existsSync(REFERENCE_BIN) && process.platform === 'linux' && process.arch === 'x64';
if (!canRun) console.warn(`envoyproxy/ratelimit is not at ${REFERENCE_BIN}: its Prometheus names are not compared`);

let xds: XdsServer | undefined;
const subjects: XdsSubject[] = [];
afterAll(async () => {
  for (const s of subjects) await s.stop();
  await xds?.close();
});

it.runIf(canRun)(
  "exports the per-rule counters under the reference's Prometheus names and labels, with its values",
  async () => {
    const port = await freePort();
    xds = await startXdsServer({ port, node: NODE, snapshot: { version: '1', resources: [RULES] } });
    const scrape = async (prom: number): Promise<string[]> => {
      const text = await (await fetch(`http://127.0.0.1:${prom}/metrics`)).text();
      return [...parseMetrics(text)]
        .filter(([k]) => NAMES.some((n) => k.startsWith(`${n}{`)))
        .map(([k, v]) => `${k} ${v}`)
        .sort();
    };
    const results: string[][] = [];
    for (const start of [startReferenceOverXds, startOursOverXds]) {
      const prom = await freePort();
      const s = await start({
        CONFIG_TYPE: 'GRPC_XDS_SOTW',
        CONFIG_GRPC_XDS_SERVER_URL: `127.0.0.1:${port}`,
        CONFIG_GRPC_XDS_NODE_ID: NODE,
        USE_PROMETHEUS: 'true',
        PROMETHEUS_ADDR: `127.0.0.1:${prom}`,
        STATS_FLUSH_INTERVAL: '200ms',
      });
      subjects.push(s);
      const client = new RlsTestClient(s.grpcAddress);
      try {
        await xds.waitFor((e) => e.event === 'request' && e.version === '1' && e.nonce !== '' && e.stream === subjects.length, {
          timeoutMs: 20_000,
          what: 'the ACK of the rules',
        });
        for (let i = 0; i < 3; i++)
          await client.ask(
            DOMAIN,
            [
              [
                [ROUTE, ROUTE],
                ['rule-0-match-0', 'rule-0-match-0'],
              ],
            ],
            1,
          );
        for (let i = 0; i < 2; i++) await client.ask(DOMAIN, [[['flat', `user-${i}`]]], 1);
        // The reference flushes its counters every STATS_FLUSH_INTERVAL: wait until the three hits are there.
        await eventually(
          async () => (await scrape(prom)).some((l) => l.startsWith('ratelimit_service_rate_limit_total_hits{') && l.includes('key2=') && l.endsWith(' 3')),
          { timeoutMs: 10_000, what: 'the counters exported' },
        );
        results.push(await scrape(prom));
      } finally {
        client.close();
      }
    }
    const [reference, ours] = results as [string[], string[]];
    expect(reference).toContain(`ratelimit_service_rate_limit_total_hits{domain="${DOMAIN}",key1="${ROUTE}_${ROUTE}",key2="rule-0-match-0_rule-0-match-0"} 3`);
    expect(reference).toContain(`ratelimit_service_rate_limit_total_hits{domain="${DOMAIN}",key1="flat"} 2`);
    // Ours also has a 0 series for each configured rule and stat that saw no hit yet; the reference has none.
    expect(ours.filter((l) => !l.endsWith(' 0'))).toEqual(reference.filter((l) => !l.endsWith(' 0')));
  },
  90_000,
);

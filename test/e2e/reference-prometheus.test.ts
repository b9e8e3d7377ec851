/**
 * envoyproxy/ratelimit's Prometheus names, compared with the reference itself: the same rules (shaped as Envoy
 * Gateway's translator writes them, over xDS from the test's go-control-plane server) and the same requests to
 * both, then both PROMETHEUS_ADDR endpoints scraped and the series compared.
 *  - USE_PROMETHEUS alone: the per-rule counters `ratelimit_service_rate_limit_*` with `domain`, `key1`, `key2`
 *    (what Envoy Gateway's global-ratelimit dashboard queries).
 *  - Envoy Gateway's environment (USE_STATSD=false, USE_PROMETHEUS=true, PROMETHEUS_MAPPER_YAML with its
 *    statsd_conf.yaml as published): every `ratelimit_service_*` series (names and labels) and the counters'
 *    values. Response-time buckets are compared by labels and count only: the reference observes whole
 *    milliseconds, this service fractions of them.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { freePort } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { portAccepts } from '../support/service-process.js';
import { only, parseSeries, type Series } from '../support/statsd-exporter.js';
import { startXdsServer, type XdsServer } from '../support/xds-server.js';
import { REFERENCE_BIN, startOursOverXds, startReferenceOverXds, type XdsSubject } from '../support/xds-subjects.js';

const NODE = 'envoy-ratelimit';
const DOMAIN = 'default/eg/http';
const ROUTE = 'httproute/default/http-ratelimit/rule/0/match/0/ratelimit_example';
const NESTED = [
  [ROUTE, ROUTE],
  ['rule-0-match-0', 'rule-0-match-0'],
];
const rules = (perHour: number) => ({
  name: DOMAIN,
  domain: DOMAIN,
  descriptors: [
    { key: ROUTE, value: ROUTE, descriptors: [{ key: 'rule-0-match-0', value: 'rule-0-match-0', rateLimit: { unit: 'HOUR', requestsPerUnit: perHour } }] },
    { key: 'flat', rateLimit: { unit: 'HOUR', requestsPerUnit: 1 } },
  ],
});
const MAPPING = join(import.meta.dirname, '../fixtures/statsd-mapping/envoy-gateway-statsd_conf.yaml');

const canRun = existsSync(REFERENCE_BIN) && process.platform === 'linux' && process.arch === 'x64';
if (!canRun) console.warn(`envoyproxy/ratelimit is not at ${REFERENCE_BIN}: its Prometheus names are not compared`);

let xds: XdsServer | undefined;
const subjects: XdsSubject[] = [];
afterAll(async () => {
  for (const s of subjects) await s.stop();
  await xds?.close();
});

/**
 * Starts the reference, then ours, over xDS with `env`; runs `drive` on each, then scrapes PROMETHEUS_ADDR's
 * `ratelimit_service_*` series once `done` holds (the reference flushes every STATS_FLUSH_INTERVAL).
 */
async function sideBySide(
  env: Record<string, string>,
  perHour: number,
  drive: (client: RlsTestClient) => Promise<void>,
  done: (s: Series) => boolean,
): Promise<[reference: Series, ours: Series]> {
  const port = await freePort();
  await xds?.close();
  xds = await startXdsServer({ port, node: NODE, snapshot: { version: '1', resources: [rules(perHour)] } });
  const results: Series[] = [];
  for (const start of [startReferenceOverXds, startOursOverXds]) {
    const prom = await freePort();
    const s = await start({
      CONFIG_TYPE: 'GRPC_XDS_SOTW',
      CONFIG_GRPC_XDS_SERVER_URL: `127.0.0.1:${port}`,
      CONFIG_GRPC_XDS_NODE_ID: NODE,
      USE_PROMETHEUS: 'true',
      PROMETHEUS_ADDR: `127.0.0.1:${prom}`,
      STATS_FLUSH_INTERVAL: '200ms',
      ...env,
    });
    subjects.push(s);
    const client = new RlsTestClient(s.grpcAddress);
    const scrape = async () => only(parseSeries(await (await fetch(`http://127.0.0.1:${prom}/metrics`)).text()), (n) => n.startsWith('ratelimit_service_'));
    try {
      await xds.waitFor((e) => e.event === 'request' && e.version === '1' && e.nonce !== '' && e.stream === results.length + 1, {
        timeoutMs: 20_000,
        what: 'the ACK of the rules',
      });
      // The reference opens its gRPC port a moment after it logs the rules loaded; a bare TCP connect (no call,
      // which it would count) says when.
      await eventually(() => portAccepts(s.grpcAddress), { timeoutMs: 10_000, what: 'the gRPC port to accept' });
      await drive(client);
      await eventually(async () => done(await scrape()), { timeoutMs: 10_000, what: 'the stats exported' });
      results.push(await scrape());
    } finally {
      client.close();
      await s.stop();
    }
  }
  return results as [Series, Series];
}

const nonZero = (s: Series) => Object.fromEntries([...s].filter(([, v]) => v !== 0).sort());

it.runIf(canRun)(
  "exports the per-rule counters under the reference's Prometheus names and labels, with its values",
  async () => {
    const [reference, ours] = await sideBySide(
      {},
      2,
      async (client) => {
        for (let i = 0; i < 3; i++) await client.ask(DOMAIN, [NESTED], 1);
        for (let i = 0; i < 2; i++) await client.ask(DOMAIN, [[['flat', `user-${i}`]]], 1);
      },
      (s) => [...s].some(([k, v]) => k.startsWith('ratelimit_service_rate_limit_total_hits{') && k.includes('key2=') && v === 3),
    );
    expect(reference.get(`ratelimit_service_rate_limit_total_hits{domain="${DOMAIN}",key1="${ROUTE}_${ROUTE}",key2="rule-0-match-0_rule-0-match-0"}`)).toBe(3);
    expect(reference.get(`ratelimit_service_rate_limit_total_hits{domain="${DOMAIN}",key1="flat"}`)).toBe(2);
    const rateLimit = (s: Series) => only(s, (n) => n.startsWith('ratelimit_service_rate_limit_'));
    expect(nonZero(rateLimit(ours))).toEqual(nonZero(rateLimit(reference)));
  },
  90_000,
);

/** The histogram's buckets without their values (whole vs fractional milliseconds), the rest as scraped. */
function comparable(series: Series): Record<string, number | string> {
  return Object.fromEntries(
    [...series].sort().map(([k, v]) => [k, k.startsWith('ratelimit_service_response_time_seconds_') && !k.includes('_count') ? 'observed' : v]),
  );
}

it.runIf(canRun)(
  "exports the series Envoy Gateway's mapping file gives the reference, with its values",
  async () => {
    const [reference, ours] = await sideBySide(
      { USE_STATSD: 'false', PROMETHEUS_MAPPER_YAML: MAPPING },
      5,
      async (client) => {
        for (let i = 0; i < 7; i++) await client.ask(DOMAIN, [NESTED], 1);
        for (let i = 0; i < 2; i++) await client.ask(DOMAIN, [[['flat', `user-${i}`]]], 1);
        await client.ask('', [[['flat', 'x']]], 1).catch(() => undefined); // refused by both: a service error
      },
      (s) =>
        s.get('ratelimit_service_total_requests{grpc_method="ShouldRateLimit"}') === 10 &&
        s.has('ratelimit_service_should_rate_limit_error{err_type="service_error"}'),
    );
    expect(reference.get(`ratelimit_service_rate_limit_over_limit{domain="${DOMAIN}",key1="${ROUTE}_${ROUTE}",key2="rule-0-match-0_rule-0-match-0"}`)).toBe(2);
    expect(reference.get('ratelimit_service_config_load_success')).toBe(1);
    expect(comparable(ours)).toEqual(comparable(reference));
  },
  90_000,
);

/**
 * Rules as Envoy Gateway's translator writes them (the RateLimitConfig outputs of its translator tests,
 * internal/xds/translator/testdata/out/ratelimit-config/ in envoyproxy/gateway: distinct-match,
 * distinct-remote-address-match, header-and-cidr-matches, global-shared-distinct-match, month-year-rule), served
 * over xDS by the test's go-control-plane server to this service and to envoyproxy/ratelimit at once, then the
 * same requests (the descriptors Envoy sends for those routes) to both: the answers must be the same. The
 * structure, keys, values and units are the fixtures'; SECOND limits are read as HOUR here, so that a window
 * boundary cannot fall inside a sequence, and limits are lowered to be reached in a few requests.
 */
import { existsSync } from 'node:fs';
import { afterAll, expect, it } from 'vitest';
import { freePort } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { startXdsServer, type RateLimitConfigJson, type XdsServer } from '../support/xds-server.js';
import { REFERENCE_BIN, startOursOverXds, startReferenceOverXds, type XdsSubject } from '../support/xds-subjects.js';

const NODE = 'envoy-ratelimit';
type Desc = Record<string, unknown>;
/** A descriptor as the translator writes it: key, value ('' for Distinct), a limit on leaves only. */
const d = (key: string, value: string, limit?: [number, string], children: Desc[] = []): Desc => ({
  key,
  value,
  ...(limit ? { rate_limit: { requests_per_unit: limit[0], unit: limit[1], unlimited: false, name: '', replaces: [] } } : {}),
  descriptors: children,
  shadow_mode: false,
  detailed_metric: false,
});
const config = (domain: string, descriptors: Desc[]): RateLimitConfigJson => ({ name: domain, domain, descriptors });

type Entries = [string, string][];
interface Fixture {
  readonly name: string;
  readonly resources: RateLimitConfigJson[];
  readonly requests: Entries[];
}

const route = (r: string): [string, string] => [r, r];
const FIXTURES: Fixture[] = [
  {
    name: 'distinct-match',
    resources: [config('first-listener', [d('first-route', 'first-route', undefined, [d('rule-0-match-0', '', [2, 'HOUR'])])])],
    requests: [...['a', 'a', 'a', 'b', 'b', 'b', 'a'].map((u): Entries => [route('first-route'), ['rule-0-match-0', `dm-${u}`]])],
  },
  {
    name: 'distinct-remote-address-match',
    resources: [
      config('first-listener', [
        d('first-route', 'first-route', undefined, [d('masked_remote_address', '192.168.0.0/16', undefined, [d('remote_address', '', [2, 'HOUR'])])]),
      ]),
    ],
    requests: [
      ...['192.168.1.1', '192.168.1.1', '192.168.1.1', '192.168.7.7'].map((ip): Entries => [
        route('first-route'),
        ['masked_remote_address', '192.168.0.0/16'],
        ['remote_address', ip],
      ]),
      [route('first-route'), ['masked_remote_address', '10.0.0.0/8'], ['remote_address', '10.1.1.1']],
      [route('first-route'), ['masked_remote_address', '10.0.0.0/8'], ['remote_address', '10.1.1.1']],
      [route('first-route'), ['masked_remote_address', '10.0.0.0/8'], ['remote_address', '10.1.1.1']],
    ],
  },
  {
    name: 'header-and-cidr-matches',
    resources: [
      config('first-listener', [
        d('first-route', 'first-route', undefined, [
          d('rule-0-match-0', 'rule-0-match-0', undefined, [
            d('rule-0-match-1', 'rule-0-match-1', undefined, [
              d('rule-0-match-2', 'rule-0-match-2', undefined, [d('masked_remote_address', '0.0.0.0/0', [2, 'HOUR'])]),
            ]),
          ]),
        ]),
      ]),
    ],
    requests: [
      ...[1, 2, 3].map((): Entries => [
        route('first-route'),
        route('rule-0-match-0'),
        route('rule-0-match-1'),
        route('rule-0-match-2'),
        ['masked_remote_address', '0.0.0.0/0'],
      ]),
      // a request missing a header match: no descriptor of the tree is complete
      [route('first-route'), route('rule-0-match-0'), route('rule-0-match-2'), ['masked_remote_address', '0.0.0.0/0']],
    ],
  },
  {
    name: 'global-shared-distinct-match',
    resources: [config('first-listener', [d('global-limit', 'global-limit', undefined, [d('rule-0-match-0', '', [2, 'HOUR'])])])],
    requests: ['x', 'y', 'x', 'x', 'y', 'y'].map((u): Entries => [route('global-limit'), ['rule-0-match-0', `gs-${u}`]]),
  },
  {
    name: 'month-year-rule',
    resources: [
      config('first-listener', [
        d('first-route', 'first-route', undefined, [d('rule-0-match-0', 'rule-0-match-0', [2, 'MONTH'])]),
        d('second-route', 'second-route', undefined, [d('rule-0-match-0', 'rule-0-match-0', [1, 'YEAR'])]),
      ]),
    ],
    requests: [
      ...[1, 2, 3].map((): Entries => [route('first-route'), route('rule-0-match-0')]),
      ...[1, 2].map((): Entries => [route('second-route'), route('rule-0-match-0')]),
    ],
  },
];

const canRun = existsSync(REFERENCE_BIN) && process.platform === 'linux' && process.arch === 'x64';
if (!canRun) console.warn(`envoyproxy/ratelimit is not at ${REFERENCE_BIN}: Envoy Gateway's fixtures are not compared`);

let xds: XdsServer | undefined;
const subjects: XdsSubject[] = [];
afterAll(async () => {
  for (const s of subjects) await s.stop();
  await xds?.close();
});

it.runIf(canRun)(
  "answers Envoy Gateway's translated rules as envoyproxy/ratelimit does, request by request",
  async () => {
    const port = await freePort();
    xds = await startXdsServer({ port, node: NODE });
    const env = {
      CONFIG_TYPE: 'GRPC_XDS_SOTW',
      CONFIG_GRPC_XDS_SERVER_URL: `127.0.0.1:${port}`,
      CONFIG_GRPC_XDS_NODE_ID: NODE,
      FORCE_START_WITHOUT_INITIAL_CONFIG: 'true',
    };
    subjects.push(await startReferenceOverXds(env), await startOursOverXds(env));
    const clients = subjects.map((s) => new RlsTestClient(s.grpcAddress));
    const ask = async (c: RlsTestClient, domain: string, entries: Entries): Promise<string> => {
      const r = await c.ask(domain, [entries], 1);
      return `${r.overall_code}/${r.statuses.map((s) => `${s.code}:${s.limit_remaining}`).join(',')}`;
    };
    try {
      let version = 0;
      for (const fixture of FIXTURES) {
        version++;
        const mark = xds.events.length;
        xds.set(String(version), fixture.resources);
        const acked = new Set<number>();
        await xds.waitFor(
          (e) => {
            if (e.event === 'request' && e.version === String(version) && e.nonce !== '' && e.stream !== undefined) acked.add(e.stream);
            return acked.size >= 2;
          },
          { from: mark, timeoutMs: 20_000, what: `both services' ACK of ${fixture.name}` },
        );
        const answers: string[][] = [[], []];
        for (const entries of fixture.requests) {
          for (const [i, c] of clients.entries()) answers[i]!.push(await ask(c, String(fixture.resources[0]!['domain']), entries));
        }
        expect({ fixture: fixture.name, answers: answers[1] }).toEqual({ fixture: fixture.name, answers: answers[0] });
        expect(
          answers[0]!.some((a) => a.startsWith('OVER_LIMIT')),
          `${fixture.name}: some request should be over its limit`,
        ).toBe(true);
      }
    } finally {
      for (const c of clients) c.close();
    }
  },
  120_000,
);

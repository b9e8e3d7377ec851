/**
 * Feature traffic for the traffic test: ShouldRateLimit requests on the `features` domain (feature-rules.ts)
 * and ext_authz Check requests built as Envoy's ext_authz filter builds them (authz-client.ts; random IPs,
 * headers, cookies, paths, some hostile values), sent raw over the same connections as the Envoy-shaped
 * RLS traffic and decoded by protobufjs from Envoy's field numbers.
 */
import type { RawDescriptor } from './raw-rls.js';
import { encodeRequest } from './raw-rls.js';
import { authzType, envoyCheckRequest, type HttpRequestSpec } from './authz-client.js';
import { FEATURE_DENIED_STATUSES, FEATURE_DOMAIN } from './feature-rules.js';
import type { CallOutcome, RawClientPool, RawOutcome, TrafficShare, TrafficStats } from './envoy-traffic.js';
import type { Prng } from './prng.js';

export const CHECK_PATH = '/envoy.service.auth.v3.Authorization/Check';

/** Values a client controls that stress escaping: quotes, backslashes, template braces, controls, non-ASCII. */
const HOSTILE = ['"', '\\', '"},{"x":1', '{{descriptor}}', '</script>', 'é✓😀', '\u202e', '\t', 'a;b', '=', '%22', '\u2028', "'", ''];

function hostile(r: Prng, ordinary: () => string): string {
  const roll = r.next();
  if (roll < 0.8) return ordinary();
  if (roll < 0.97) return r.pick(HOSTILE) + r.pick(HOSTILE) + r.int(0, 9);
  return 'L'.repeat(r.int(100, 700)) + r.pick(HOSTILE);
}

const CRITICALITY = ['critical', 'default', 'sheddable', 'CRITICAL', 'Sheddable', 'bogus'];
const ip = (r: Prng) =>
  r.chance(0.2) ? '10.66.0.1' : r.chance(0.1) ? `2001:db8::${r.int(0, 0xffff).toString(16)}` : `10.${r.int(0, 3)}.${r.int(0, 15)}.${r.int(1, 254)}`;
const user = (r: Prng) => hostile(r, () => `u${r.int(0, 4)}`);
const tenant = (r: Prng) => `t${r.int(0, 5)}`;
const session = (r: Prng) => hostile(r, () => `s${r.int(0, 7)}`);
const path = (r: Prng) => hostile(r, () => `/api/v${r.int(1, 2)}/items`);
const host = (r: Prng) => r.pick(['shop.example.com', 'api.example.com', 'Static.Example.com']);

/** One ShouldRateLimit request on the features domain: 1–5 of the feature descriptors, in random order. */
export function featureRlsRequest(r: Prng): Uint8Array {
  const all: (() => RawDescriptor)[] = [
    () => ({ entries: [['remote_address', ip(r)]] }),
    () => ({ entries: [['user', user(r)]] }),
    () => ({
      entries: r.chance(0.5)
        ? [
            ['criticality', r.pick(CRITICALITY)],
            ['tier', `gold${r.int(0, 2)}`],
          ]
        : [
            ['tier', `gold${r.int(0, 2)}`],
            ['criticality', r.pick(CRITICALITY)],
          ],
    }),
    () => ({ entries: [['tenant', tenant(r)]] }),
    () => ({ entries: [['session', session(r)]] }),
    () => ({ entries: [['path', path(r)]] }),
    () => ({ entries: [['method', r.pick(['GET', 'POST'])]] }),
    () => ({ entries: [['plan', r.pick(['free', 'pro'])]] }),
    () => ({ entries: [['host', host(r).toLowerCase()]], ...(r.chance(0.1) ? { hitsAddend: r.int(0, 2) } : {}) }),
  ];
  const descriptors = Array.from({ length: r.int(1, 5) }, () => r.pick(all)());
  return encodeRequest(FEATURE_DOMAIN, descriptors, r.chance(0.05) ? 2 : 0);
}

/** One HTTP request as Envoy's ext_authz filter describes it, mostly on the features domain's routes. */
export function featureCheckSpec(r: Prng): HttpRequestSpec {
  const headers: Record<string, string> = { 'user-agent': hostile(r, () => 'curl/8.5.0') };
  if (r.chance(0.7)) headers['x-user'] = user(r);
  if (r.chance(0.5)) headers['x-tier'] = `gold${r.int(0, 2)}`;
  if (r.chance(0.4)) headers['x-criticality'] = r.pick(CRITICALITY);
  if (r.chance(0.5)) headers['x-tenant'] = tenant(r);
  if (r.chance(0.3)) headers['x-plan'] = r.pick(['free', 'pro']);
  if (r.chance(0.6)) headers['cookie'] = r.chance(0.5) ? `session=${session(r)}` : `theme=dark; session="${session(r)}"; lang=en`;
  const domain = r.next();
  return {
    ip: ip(r),
    method: r.pick(['GET', 'GET', 'POST']),
    path: `${path(r)}${r.chance(0.3) ? `?q=${encodeURIComponent(hostile(r, () => 'shoes'))}` : ''}`,
    host: host(r),
    headers,
    // Most routes name the domain; some name the RLS-only example domain or none (allowed untouched).
    contextExtensions: domain < 0.9 ? { ratelimit_domain: FEATURE_DOMAIN } : domain < 0.95 ? { ratelimit_domain: 'edge' } : {},
  };
}

export function encodeCheck(spec: HttpRequestSpec): Uint8Array {
  const type = authzType('CheckRequest');
  return type.encode(type.fromObject(envoyCheckRequest(spec))).finish();
}

interface DecodedCheck {
  status?: { code?: number; message?: string };
  denied_response?: { status?: { code?: number }; headers?: { header?: { key?: string; value?: string } }[]; body?: string };
}

/**
 * A Check call's outcome: `verdict` allowed / denied <http status> / store failure <http status>; an answer
 * that is none of these (another code, a denial without status, a status the rules cannot produce, a store
 * failure outside FAILURE_MODE=closed) is UNEXPECTED_ANSWER.
 */
export function checkOutcome(o: RawOutcome, storeFailureAllowed: boolean): CallOutcome {
  const base = { ms: o.ms, deadlineMs: o.deadlineMs };
  if (o.body === undefined) return { ...base, status: o.status, ...(o.message === undefined ? {} : { message: o.message }) };
  let d: DecodedCheck;
  try {
    d = authzType('CheckResponse').toObject(authzType('CheckResponse').decode(o.body), { defaults: false });
  } catch (error) {
    return { ...base, status: 'UNDECODABLE_ANSWER', message: String(error) };
  }
  const code = d.status?.code ?? 0;
  const http = d.denied_response?.status?.code;
  const contentType = d.denied_response?.headers?.find((h) => h.header?.key === 'content-type')?.header?.value;
  const extra = { ...(d.denied_response?.body ? { body: d.denied_response.body } : {}), ...(contentType === undefined ? {} : { contentType }) };
  if (code === 0 && d.denied_response === undefined) return { ...base, status: 'OK', verdict: 'allowed' };
  if (code === 8 && http !== undefined && FEATURE_DENIED_STATUSES.has(http)) return { ...base, status: 'OK', verdict: `denied ${http}`, ...extra };
  if (code === 14 && http === 503 && storeFailureAllowed) return { ...base, status: 'OK', verdict: 'store failure 503', ...extra };
  return { ...base, status: 'UNEXPECTED_ANSWER', message: `code ${code} http ${http ?? '-'} ${d.status?.message ?? ''}` };
}

/** The feature mix of the traffic test: `checkShare` of the calls are Check, `rlsShare` ShouldRateLimit on the features domain. */
export function featureMix(o: {
  checkShare: number;
  rlsShare: number;
  checkStats: TrafficStats;
  rlsStats: TrafficStats;
  storeFailureAllowed: boolean;
}): TrafficShare[] {
  return [
    {
      share: o.checkShare,
      stats: o.checkStats,
      send: (pool: RawClientPool, r: Prng, deadlineMs: number) =>
        pool.call(CHECK_PATH, encodeCheck(featureCheckSpec(r)), deadlineMs).then((raw) => checkOutcome(raw, o.storeFailureAllowed)),
    },
    { share: o.rlsShare, stats: o.rlsStats, send: (pool: RawClientPool, r: Prng, deadlineMs: number) => pool.send(featureRlsRequest(r), deadlineMs) },
  ];
}

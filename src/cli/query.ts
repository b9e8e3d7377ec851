/**
 * `ratelimit query`: builds a RateLimitRequest from the command line, sends it to a running server over
 * gRPC (as Envoy would) and prints the decision.
 *
 *   ratelimit query --domain edge remote_address=10.0.0.1 generic_key=api,user=alice --hits 2
 *
 * A dry run by default: every descriptor is sent with hits_addend 0 (present), which the protocol and this
 * service treat as a pure check: nothing is counted. Whether a request of --hits hits would be admitted is
 * read from what is left: it fits a descriptor iff it is at most that descriptor's remaining quota (the limit
 * that speaks for a descriptor is the one with the least left). `--spend` sends the real request instead.
 *
 * Remaining quota is shown as every other answer shows it (Envoy's headers, POST /json): what is left after this
 * request. A dry run computes it from what is left before: less --hits when the request would be admitted.
 *
 * The protocol answers a domain with no rules as it answers a descriptor no rule matches (OK, no limit), so when
 * no descriptor matched, query asks the admin port's GET /rules whether the domain has rules at all: a typo in
 * the domain is an error, not an OK.
 */
import * as grpc from '@grpc/grpc-js';
import { clientFor, loadProtos } from '../server/grpc/protos.js';
import type { WireResponse, WireStatus } from '../server/rls/proto-objects.js';
import { eachArg } from './args.js';
import { explainCallError } from '../server/grpc/call-errors.js';

export const QUERY_USAGE = `usage: ratelimit query [options] --domain D k=v[,k=v...] ...

A dry run unless --spend: nothing is counted (each descriptor is sent with hits_addend 0, a pure check), and
the answer says whether a request of --hits hits would be admitted now. "remaining" is what would be left
after that request, as Envoy's headers and POST /json show it. A predict_cost rule charges its prediction
at admission, whatever the hits: the answer shows it ("predicted cost") and the dry run judges by it.

query options:
  --server HOST:PORT    gRPC address of the server (default 127.0.0.1:8081)
  --domain D            the domain (required); one with no rules is an error (exit 1), the loaded ones listed
  --admin HOST:PORT     HTTP admin address, asked for the loaded domains when no rule matched
                        (default: the --server host, port 8080; 127.0.0.1:8080 for unix:)
  --hits N              hits of the request (default: 1); with --spend, sent as the request-level hits_addend
  --spend               send the real request: it counts against the limits, as one from Envoy would
  --timeout-ms N        call deadline (default 1000)
  --json                print the response as JSON (proto3 JSON mapping, proto field names, defaults left out)
  --help                this text
  k=v[,k=v...]          one descriptor per argument, entries in order; escape a comma or backslash in a value with \\`;

interface Writable {
  write(text: string): unknown;
}

type Callback = (e: grpc.ServiceError | null, r: WireResponse) => void;
interface RlsClient {
  ShouldRateLimit(request: unknown, options: grpc.CallOptions, callback: Callback): void;
  close(): void;
}

/** Splits `k=v,k2=v2` on unescaped commas; the first `=` of each part separates key and value. */
export function parseDescriptor(arg: string): { key: string; value: string }[] {
  const parts: string[] = [];
  let current = '';
  for (let i = 0; i < arg.length; i++) {
    const c = arg[i]!;
    if (c === '\\' && i + 1 < arg.length) current += arg[++i];
    else if (c === ',') {
      parts.push(current);
      current = '';
    } else current += c;
  }
  parts.push(current);
  return parts.map((p) => {
    const eq = p.indexOf('=');
    if (eq <= 0) throw new Error(`'${p}' is not key=value`);
    return { key: p.slice(0, eq), value: p.slice(eq + 1) };
  });
}

export async function runQuery(argv: readonly string[], out: Writable, err: Writable): Promise<number> {
  let server = '127.0.0.1:8081';
  let domain: string | undefined;
  let hits = 0;
  let timeoutMs = 1000;
  let json = false;
  let spend = false;
  let admin: string | undefined;
  if (argv.includes('--help') || argv.includes('-h')) {
    out.write(`${QUERY_USAGE}\n`);
    return 0;
  }
  const descriptors: { entries: { key: string; value: string }[] }[] = [];
  try {
    eachArg(argv, (a, value) => {
      if (a === '--server') server = value();
      else if (a === '--domain') domain = value();
      else if (a === '--admin') admin = value();
      else if (a === '--hits') hits = Number(value());
      else if (a === '--timeout-ms') timeoutMs = Number(value());
      else if (a === '--json') json = true;
      else if (a === '--spend') spend = true;
      else if (a.startsWith('--')) throw new Error(`unknown option ${a}`);
      else descriptors.push({ entries: parseDescriptor(a) });
    });
    if (domain === undefined) throw new Error('--domain is required');
    if (descriptors.length === 0) throw new Error('give at least one descriptor (k=v[,k=v...])');
    if (!Number.isInteger(hits) || hits < 0) throw new Error('--hits must be a whole number');
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw new Error('--timeout-ms must be a positive whole number');
  } catch (e) {
    err.write(`query: ${(e as Error).message}\n\n${QUERY_USAGE}\n`);
    return 2;
  }

  const Client = clientFor(loadProtos().rls, 'RateLimitService');
  const client = new Client(server, grpc.credentials.createInsecure()) as unknown as RlsClient;
  try {
    const response = await new Promise<WireResponse>((resolve, reject) => {
      const request = spend
        ? { domain, descriptors, hits_addend: hits }
        : { domain, descriptors: descriptors.map((d) => ({ ...d, hits_addend: { value: 0 } })) };
      client.ShouldRateLimit(request, { deadline: Date.now() + timeoutMs }, (e, r) => (e ? reject(e) : resolve(r)));
    });
    // A predict_cost rule charges its prediction at admission, whatever the hits (docs/costs.md).
    const predicted = predictedCost(response);
    const wanted = predicted ?? Math.max(hits, 1);
    const over = spend ? response.overall_code === 'OVER_LIMIT' : wouldReject(response, wanted);
    if (response.statuses.every((s) => !s.current_limit && !isUnlimited(s))) {
      const missing = await domainWithoutRules(admin ?? `${hostOf(server)}:8080`, domain);
      if (missing !== undefined) {
        err.write(`query: ${missing}\n`);
        return 1;
      }
    }
    // A dry run read the quota before the request: show what the request would leave, as a real answer does.
    const shown = spend || over ? response : afterRequest(response, wanted);
    if (json) out.write(`${JSON.stringify(responseToJson(shown), null, 2)}\n`);
    else
      out.write(
        `${spend ? '' : `dry run, nothing counted (--spend sends the real request): a request ${predicted !== undefined ? `charged its predicted cost ${predicted}` : `of ${wanted} hit(s)`} would be ${over ? 'REJECTED' : 'admitted'}\n`}${formatResponse(shown, descriptors)}${neverFits(shown, wanted)}`,
      );
    return over ? 3 : 0;
  } catch (e) {
    err.write(`query: ${explainCallError(e as grpc.ServiceError, server, 'the rate-limit service')}\n`);
    return 1;
  } finally {
    client.close();
  }
}

/** `host` of `host:port` (or of `[v6]:port`); 127.0.0.1 for a Unix socket. */
function hostOf(address: string): string {
  if (address.startsWith('unix:')) return '127.0.0.1';
  const at = address.lastIndexOf(':');
  return at > 0 ? address.slice(0, at) : address;
}

/**
 * Why `domain` cannot be matched by the server at `admin` (GET /rules): it is not loaded, or has no rules.
 * Undefined when it has rules. A server whose admin port cannot be read is reported too: an unverified
 * "no rule matched" would look like success.
 */
async function domainWithoutRules(admin: string, domain: string): Promise<string | undefined> {
  const url = `http://${admin}/rules`;
  let domains: { name: string; rules?: unknown[] }[];
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
    domains = ((await res.json()) as { domains?: { name: string; rules?: unknown[] }[] }).domains ?? [];
  } catch (e) {
    return `no rule matched, and the loaded domains could not be read from ${url} (${(e as Error).message}); give the admin address with --admin HOST:PORT`;
  }
  const found = domains.find((d) => d.name === domain);
  if (found !== undefined && (found.rules?.length ?? 0) > 0) return undefined;
  const names = domains.filter((d) => (d.rules?.length ?? 0) > 0).map((d) => d.name);
  return `domain '${domain}' has no rules on this server; domains with rules: ${names.join(', ') || '(none)'}`;
}

/**
 * The answer a request of `hits` hits would get from a dry run's answer (admitted): each limit's remaining less
 * the hits, in the statuses and in the headers that carry it (the IETF `ratelimit` header's `r=`, and a
 * `...remaining` header such as x-ratelimit-remaining), so that every line printed tells the same quota.
 */
function afterRequest(r: WireResponse, hits: number): WireResponse {
  const less = (n: string) => String(Math.max(0, Number(n) - hits));
  const headers = r.response_headers_to_add.map((h) => {
    if (h.key.toLowerCase() === 'ratelimit') return { ...h, value: h.value.replace(/;r=(\d+)/g, (_, n: string) => `;r=${less(n)}`) };
    if (/remaining$/i.test(h.key) && /^\d+$/.test(h.value)) return { ...h, value: less(h.value) };
    return h;
  });
  return {
    ...r,
    statuses: r.statuses.map((s) => (s.current_limit ? { ...s, limit_remaining: Math.max(0, s.limit_remaining - hits) } : s)),
    response_headers_to_add: headers,
  };
}

/** A line per limit the request is larger than: no wait makes it fit, whatever retry-after says. */
function neverFits(r: WireResponse, hits: number): string {
  const lines: string[] = [];
  r.statuses.forEach((s, i) => {
    const limit = s.current_limit;
    if (limit && hits > limit.requests_per_unit)
      lines.push(
        `  [${i}] ${hits} hits can never fit a limit of ${limit.requests_per_unit}/${limit.unit.toLowerCase()}: no retry will be admitted (retry-after only says when the window turns); send fewer hits or raise the limit\n`,
      );
  });
  return lines.join('');
}

/**
 * The response in the proto3 JSON mapping with the proto's field names (as `grpcurl -format-json` with
 * preserved names, and as before: `overall_code`, ...): default values (0, "", empty lists, unset messages)
 * left out, a Duration as "40s", a Struct as a plain object. No Buffers, nulls or int64 strings.
 */
export function responseToJson(r: WireResponse): Record<string, unknown> {
  const out: Record<string, unknown> = { overall_code: r.overall_code };
  const statuses = r.statuses.map((s) => {
    const o: Record<string, unknown> = { code: s.code };
    if (s.current_limit) {
      o.current_limit = {
        ...(s.current_limit.name ? { name: s.current_limit.name } : {}),
        requests_per_unit: s.current_limit.requests_per_unit,
        unit: s.current_limit.unit,
      };
    }
    if (s.limit_remaining) o.limit_remaining = s.limit_remaining;
    if (s.duration_until_reset) o.duration_until_reset = durationJson(s.duration_until_reset);
    return o;
  });
  if (statuses.length > 0) out.statuses = statuses;
  const headers = (list: { key: string; value: string }[]) => list.map((h) => ({ key: h.key, value: h.value }));
  if (r.response_headers_to_add.length > 0) out.response_headers_to_add = headers(r.response_headers_to_add);
  if (r.request_headers_to_add.length > 0) out.request_headers_to_add = headers(r.request_headers_to_add);
  if (r.raw_body.length > 0) out.raw_body = r.raw_body.toString('base64');
  if (r.dynamic_metadata) out.dynamic_metadata = structJson(r.dynamic_metadata);
  return out;
}

function durationJson(d: { seconds: string; nanos: number }): string {
  const nanos = d.nanos ? `.${String(d.nanos).padStart(9, '0').replace(/0+$/, '')}` : '';
  return `${d.seconds}${nanos}s`;
}

/**
 * A google.protobuf.Value as proto-loader decodes it: protobufjs bundles the well-known types with camelCase
 * names (keepCase keeps them so, as proto-objects.ts notes for encoding), and `kind` names the member that is set.
 */
type WireValue = {
  kind?: string;
  numberValue?: number;
  stringValue?: string;
  boolValue?: boolean;
  structValue?: { fields: Record<string, unknown> };
  listValue?: { values?: unknown[] };
};

function valueJson(v: unknown): unknown {
  const w = v as WireValue;
  switch (w.kind) {
    case 'numberValue':
      return w.numberValue;
    case 'stringValue':
      return w.stringValue;
    case 'boolValue':
      return w.boolValue;
    case 'structValue':
      return structJson(w.structValue!);
    case 'listValue':
      return (w.listValue!.values ?? []).map(valueJson);
    default:
      return null; // nullValue, or no kind set
  }
}

function structJson(s: { fields: Record<string, unknown> }): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s.fields ?? {})) out[k] = valueJson(v);
  return out;
}

/** The prediction a predict_cost rule answered with (dynamic metadata `predicted_cost`), if any. */
function predictedCost(r: WireResponse): number | undefined {
  const v = r.dynamic_metadata?.fields?.predicted_cost;
  if (v === undefined) return undefined;
  const n = Number(valueJson(v));
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/** A dry run's verdict: some descriptor is over already, or has less left than the request would take. */
function wouldReject(r: WireResponse, hits: number): boolean {
  return r.overall_code === 'OVER_LIMIT' || r.statuses.some((s) => s.current_limit != null && s.limit_remaining < hits);
}

/** `unlimited: true` answers with no current_limit and the uint32 maximum remaining. */
function isUnlimited(s: WireStatus): boolean {
  return s.limit_remaining === 4_294_967_295;
}

function formatResponse(r: WireResponse, descriptors: readonly { entries: { key: string; value: string }[] }[]): string {
  const lines = [`overall: ${r.overall_code}`];
  r.statuses.forEach((s, i) => {
    const d = descriptors[i]?.entries.map((e) => `${e.key}=${e.value}`).join(',') ?? '?';
    if (!s.current_limit) {
      // No rule matched (Envoy skips such a status), or the rule is `unlimited`: nothing to count down.
      lines.push(`  [${i}] ${d}: ${s.code}, ${isUnlimited(s) ? 'unlimited' : 'no limit applies (no rule matched)'}`);
      return;
    }
    const limit = `${s.current_limit.requests_per_unit}/${s.current_limit.unit.toLowerCase()}${s.current_limit.name ? ` (${s.current_limit.name})` : ''}`;
    const reset = s.duration_until_reset ? `, reset in ${s.duration_until_reset.seconds}s` : '';
    lines.push(`  [${i}] ${d}: ${s.code}, ${limit}, remaining ${s.limit_remaining} after this request${reset}`);
  });
  const predicted = predictedCost(r);
  if (predicted !== undefined) lines.push(`  predicted cost: ${predicted} (charged at admission instead of the hits)`);
  for (const h of r.response_headers_to_add) lines.push(`  header ${h.key}: ${h.value}`);
  for (const h of r.request_headers_to_add) lines.push(`  upstream header ${h.key}: ${h.value}`);
  // on_limit body: shown as text, each line indented (JSON output carries it as raw_body, base64).
  if (r.raw_body.length > 0) lines.push(`  body: ${r.raw_body.toString('utf8').replace(/\n/g, '\n        ')}`);
  return `${lines.join('\n')}\n`;
}

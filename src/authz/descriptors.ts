/**
 * Descriptors from an HTTP request, by a domain's `authz:` block: each `rate_limits` item gives one
 * descriptor whose entries follow its actions in order, with Envoy's semantics (router_ratelimit.cc):
 * an action that cannot produce its entry drops the whole descriptor, except that `skip_if_absent` only
 * leaves the entry out; a descriptor left with no entries is not sent.
 */
import type { CompiledAuthz, CompiledAuthzAction } from '../config/authz-types.js';
import type { DescriptorEntry, RequestDescriptor } from '../vocab/types.js';
import { formatIp, maskIp, parseIp, type IpAddress } from './ip.js';
import { allHeadersMatch, allQueryParametersMatch } from './matchers.js';
import { normalizePath } from './path.js';
import { cookieValue, pathWithoutQuery, queryParameter } from './request-values.js';
import type { CheckAttributes, RegionLookup } from './types.js';

export interface DescriptorOptions {
  /** Trusted region headers when an action names none (AUTHZ_REGION_HEADERS), lowercased. */
  readonly regionHeaders: readonly string[];
  /**
   * AUTHZ_CLIENT_ADDRESS_HEADER, lowercased: a header with the trusted client address; '' or absent → the
   * source address. Envoy's ext_authz reports the TCP peer as the source even when xff_num_trusted_hops makes
   * another address the client, so behind a load balancer Envoy must pass the client in a header.
   */
  readonly clientAddressHeader?: string;
  /** The GEOIP_DB lookup, when configured. */
  readonly region?: RegionLookup;
}

/** What one action gives: an entry, nothing (skip_if_absent), or the end of the descriptor. */
type Produced = DescriptorEntry | 'skip' | 'drop';

interface RequestView {
  readonly attrs: CheckAttributes;
  readonly ip: IpAddress | undefined;
  readonly options: DescriptorOptions;
}

export function buildDescriptors(authz: CompiledAuthz, attrs: CheckAttributes, options: DescriptorOptions): RequestDescriptor[] {
  const view: RequestView = { attrs, ip: clientIp(attrs, options.clientAddressHeader), options };
  const out: RequestDescriptor[] = [];
  for (const rl of authz.rateLimits) {
    const entries: DescriptorEntry[] = [];
    let dropped = false;
    for (const action of rl.actions) {
      const p = produce(action, view);
      if (p === 'drop') {
        dropped = true;
        break;
      }
      if (p !== 'skip') entries.push(p);
    }
    if (!dropped && entries.length > 0) out.push({ entries });
  }
  return out;
}

/** The header's address when configured and present as an IP, else the source address. */
function clientIp(attrs: CheckAttributes, header: string | undefined): IpAddress | undefined {
  const fromHeader = header ? attrs.http.headers.get(header)?.trim() : undefined;
  const ip = fromHeader ? parseIp(fromHeader) : undefined;
  if (ip !== undefined) return ip;
  return attrs.sourceAddress === undefined ? undefined : parseIp(attrs.sourceAddress);
}

const absent = (skip: boolean): Produced => (skip ? 'skip' : 'drop');

function produce(action: CompiledAuthzAction, view: RequestView): Produced {
  const { http } = view.attrs;
  switch (action.type) {
    case 'remote_address':
      return view.ip ? { key: 'remote_address', value: formatIp(view.ip) } : 'drop';
    case 'masked_remote_address':
      return view.ip ? { key: 'masked_remote_address', value: maskIp(view.ip, view.ip.version === 4 ? action.v4 : action.v6) } : 'drop';
    case 'request_headers': {
      const value = http.headers.get(action.header);
      return value === undefined ? absent(action.skipIfAbsent) : { key: action.key, value };
    }
    case 'query_parameters': {
      const value = queryParameter(http.path, action.param);
      return value === undefined ? absent(action.skipIfAbsent) : { key: action.key, value };
    }
    case 'generic_key':
      return { key: action.key, value: action.value };
    case 'header_value_match':
      return allHeadersMatch(action.headers, http.headers) === action.expectMatch ? { key: action.key, value: action.value } : 'drop';
    case 'query_parameter_value_match':
      return allQueryParametersMatch(action.params, http.path) === action.expectMatch ? { key: action.key, value: action.value } : 'drop';
    case 'cookie': {
      const value = cookieValue(http.headers.get('cookie'), action.name);
      return value === undefined ? absent(action.skipIfAbsent) : { key: action.key, value };
    }
    case 'method':
      return http.method === '' ? 'drop' : { key: action.key, value: http.method };
    case 'path': {
      if (http.path === '') return 'drop';
      return { key: action.key, value: normalizePath(action.stripQuery ? pathWithoutQuery(http.path) : http.path) };
    }
    case 'host':
      return http.host === '' ? 'drop' : { key: action.key, value: http.host.toLowerCase() };
    case 'region': {
      const value = regionOf(action.headers ?? view.options.regionHeaders, action.geoip, view);
      return value === undefined ? absent(action.skipIfAbsent) : { key: action.key, value };
    }
  }
}

/** The first trusted header with a value, else the database's answer for the client address; upper case. */
function regionOf(headers: readonly string[], geoip: boolean, view: RequestView): string | undefined {
  for (const name of headers) {
    const v = view.attrs.http.headers.get(name)?.trim();
    if (v !== undefined && v !== '') return v.toUpperCase();
  }
  if (!geoip || view.options.region === undefined || view.ip === undefined) return undefined;
  return view.options.region(formatIp(view.ip))?.toUpperCase();
}

/**
 * The `authz:` block of a rules file: how the ext_authz Check service builds descriptors from the HTTP
 * request (docs/ext-authz.md). The raw form is plain data (it crosses the reload worker's thread boundary,
 * load-worker.ts); the compiled form adds the compiled regular expressions.
 *
 * Action names, fields and defaults are Envoy's route `rate_limits[].actions` (config.route.v3.RateLimit.Action)
 * plus ours in the same style (cookie, method, path, host, region).
 */

/** Envoy's StringMatcher (exact, prefix, suffix, contains, safe_regex; ignore_case except for regex). */
export type RawStringMatch =
  | { readonly kind: 'exact' | 'prefix' | 'suffix' | 'contains'; readonly value: string; readonly ignoreCase: boolean }
  | { readonly kind: 'safe_regex'; readonly regex: string };

/** Envoy's HeaderMatcher: a string match, a presence match, or (neither given) presence. */
export interface RawHeaderMatcher {
  readonly name: string;
  /** undefined → the header must be present (Envoy: no match specifier means present_match). */
  readonly match?: RawStringMatch;
  /** `present_match: false` matches when the header is absent. */
  readonly present?: boolean;
  readonly invert: boolean;
  readonly treatMissingAsEmpty: boolean;
}

/** Envoy's QueryParameterMatcher: `string_match`, or `present_match`. */
export interface RawQueryMatcher {
  readonly name: string;
  readonly match?: RawStringMatch;
}

export type RawAuthzAction =
  | { readonly type: 'remote_address' }
  | { readonly type: 'masked_remote_address'; readonly v4: number; readonly v6: number }
  | { readonly type: 'request_headers'; readonly header: string; readonly key: string; readonly skipIfAbsent: boolean }
  | { readonly type: 'query_parameters'; readonly param: string; readonly key: string; readonly skipIfAbsent: boolean }
  | { readonly type: 'generic_key'; readonly key: string; readonly value: string }
  | {
      readonly type: 'header_value_match';
      readonly key: string;
      readonly value: string;
      readonly expectMatch: boolean;
      readonly headers: readonly RawHeaderMatcher[];
    }
  | {
      readonly type: 'query_parameter_value_match';
      readonly key: string;
      readonly value: string;
      readonly expectMatch: boolean;
      readonly params: readonly RawQueryMatcher[];
    }
  | { readonly type: 'cookie'; readonly name: string; readonly key: string; readonly skipIfAbsent: boolean }
  | { readonly type: 'method'; readonly key: string }
  | { readonly type: 'path'; readonly key: string; readonly stripQuery: boolean }
  | { readonly type: 'host'; readonly key: string }
  /** `headers` undefined → the AUTHZ_REGION_HEADERS setting; `geoip` false → never look up GEOIP_DB. */
  | { readonly type: 'region'; readonly key: string; readonly headers?: readonly string[]; readonly geoip: boolean; readonly skipIfAbsent: boolean };

export type AuthzActionType = RawAuthzAction['type'];

/** One `rate_limits` item: its actions produce one descriptor, in order. */
export interface RawAuthzRateLimit {
  readonly actions: readonly RawAuthzAction[];
}

export interface RawAuthz {
  readonly rateLimits: readonly RawAuthzRateLimit[];
  /** `file:line` of the block, for /rules and errors. */
  readonly source: string;
  /** Where the `authz` key stands. */
  readonly line: number;
  readonly column: number;
}

/** A compiled string matcher: true when `value` matches. */
export type StringMatcher = (value: string) => boolean;

export interface CompiledHeaderMatcher {
  readonly name: string;
  readonly match?: StringMatcher;
  readonly present?: boolean;
  readonly invert: boolean;
  readonly treatMissingAsEmpty: boolean;
}

export interface CompiledQueryMatcher {
  readonly name: string;
  readonly match?: StringMatcher;
}

export type CompiledAuthzAction =
  | Exclude<RawAuthzAction, { type: 'header_value_match' | 'query_parameter_value_match' }>
  | {
      readonly type: 'header_value_match';
      readonly key: string;
      readonly value: string;
      readonly expectMatch: boolean;
      readonly headers: readonly CompiledHeaderMatcher[];
    }
  | {
      readonly type: 'query_parameter_value_match';
      readonly key: string;
      readonly value: string;
      readonly expectMatch: boolean;
      readonly params: readonly CompiledQueryMatcher[];
    };

export interface CompiledAuthz {
  readonly rateLimits: readonly { readonly actions: readonly CompiledAuthzAction[] }[];
  readonly source: string;
}

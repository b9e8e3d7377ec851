/**
 * Envoy's HeaderMatcher and QueryParameterMatcher evaluation for header_value_match and
 * query_parameter_value_match (all matchers of an action must match).
 */
import type { CompiledHeaderMatcher, CompiledQueryMatcher } from '../config/authz-types.js';
import { queryParameter } from './request-values.js';

/**
 * One header matcher, as Envoy's HeaderUtility evaluates it. An absent header matches only
 * `present_match: false`; inverted, it matches every matcher but `present_match: false` (a value matcher
 * cannot match an absent header, so its inverse does). With treat_missing_header_as_empty it is matched as ''.
 */
export function headerMatches(m: CompiledHeaderMatcher, headers: ReadonlyMap<string, string>): boolean {
  let value = headers.get(m.name);
  if (value === undefined) {
    if (!m.treatMissingAsEmpty) {
      const presenceMatch = m.match === undefined;
      const wantsPresent = m.present !== false;
      return m.invert ? !presenceMatch || wantsPresent : presenceMatch && !wantsPresent;
    }
    value = '';
  }
  let matched: boolean;
  if (m.match !== undefined) matched = m.match(value);
  else matched = m.present !== false; // present: a presence match for true (or none given), absence for false
  return matched !== m.invert;
}

export function allHeadersMatch(matchers: readonly CompiledHeaderMatcher[], headers: ReadonlyMap<string, string>): boolean {
  return matchers.every((m) => headerMatches(m, headers));
}

/** Every query matcher matches: a present parameter whose (decoded) value passes string_match, if any. */
export function allQueryParametersMatch(matchers: readonly CompiledQueryMatcher[], path: string): boolean {
  return matchers.every((m) => {
    const value = queryParameter(path, m.name);
    if (value === undefined) return false;
    return m.match === undefined || m.match(value);
  });
}

/**
 * Envoy's StringMatcher semantics, compiled: exact / prefix / suffix / contains (with ignore_case), and
 * safe_regex as a full match in RE2 syntax. The regex engine is re2js (a port of RE2): linear time on any
 * input, so a rule's regex can never be made to backtrack on a hostile header value, as with Envoy's RE2.
 */
import { RE2JS } from 're2js';
import type { RawStringMatch, StringMatcher } from '../authz-types.js';

/** The longest regex accepted; longer patterns are almost surely a mistake and cost memory per rule set. */
export const MAX_REGEX_LENGTH = 1024;

/** Compiles a safe_regex; throws an Error whose message says why it is not a valid RE2 expression. */
export function compileRegex(pattern: string): RE2JS {
  if (pattern.length > MAX_REGEX_LENGTH) throw new Error(`is ${pattern.length} characters long; at most ${MAX_REGEX_LENGTH} are allowed`);
  try {
    return RE2JS.compile(pattern);
  } catch (err) {
    throw new Error(`is not a valid RE2 regular expression: ${err instanceof Error ? err.message : String(err)}`);
  }
}

export function compileStringMatch(m: RawStringMatch): StringMatcher {
  if (m.kind === 'safe_regex') {
    const re = compileRegex(m.regex);
    return (v) => re.matches(v);
  }
  const want = m.ignoreCase ? m.value.toLowerCase() : m.value;
  const norm = m.ignoreCase ? (v: string) => v.toLowerCase() : (v: string) => v;
  switch (m.kind) {
    case 'exact':
      return (v) => norm(v) === want;
    case 'prefix':
      return (v) => norm(v).startsWith(want);
    case 'suffix':
      return (v) => norm(v).endsWith(want);
    case 'contains':
      return (v) => norm(v).includes(want);
  }
}

/**
 * Wildcard descriptor values. `*` matches any run of characters, the empty run included, and may appear anywhere
 * and several times (`user-*`, `*.jpg`, `img-*-v*`). envoyproxy/ratelimit only honours a trailing `*`; its
 * configs mean the same here. Matching is a left-to-right scan of the literal parts (no regular expression, so
 * no backtracking blow-up on hostile request values), which is correct for `*`-only patterns: taking the
 * leftmost occurrence of each middle part never prevents a later part from matching.
 */

export interface Glob {
  readonly pattern: string;
  matches(text: string): boolean;
}

export function isWildcard(value: string): boolean {
  return value.includes('*');
}

export function compileGlob(pattern: string): Glob {
  const parts = pattern.split('*');
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  const middle = parts.slice(1, -1).filter((p) => p !== '');
  const minLength = first.length + last.length + middle.reduce((n, p) => n + p.length, 0);
  return Object.freeze({
    pattern,
    matches(text: string): boolean {
      if (text.length < minLength || !text.startsWith(first) || !text.endsWith(last)) return false;
      let at = first.length;
      const end = text.length - last.length;
      for (const part of middle) {
        const found = text.indexOf(part, at);
        if (found < 0 || found + part.length > end) return false;
        at = found + part.length;
      }
      return true;
    },
  });
}

/**
 * A descriptor key ending in `*` (`key: user*`): envoyproxy/ratelimit matches it as a prefix of the request's key
 * (`user`, `userX`, ...), with the value matched as usual (none = any value, exact, or a wildcard).
 */
export function isKeyPattern(key: string): boolean {
  return key.length > 1 && key.endsWith('*');
}

/** Whether a node with a key pattern (see isKeyPattern) matches a request entry. */
export function keyPatternMatches(node: { readonly key: string; readonly value: string; readonly glob?: Glob }, key: string, value: string): boolean {
  if (!key.startsWith(node.key.slice(0, -1))) return false;
  if (node.value === '') return true;
  return node.glob !== undefined ? node.glob.matches(value) : node.value === value;
}

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

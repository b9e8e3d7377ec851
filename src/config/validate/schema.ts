/**
 * The keys each section of a rules file accepts, and the "did you mean" hint for the ones it does not.
 *
 * envoyproxy/ratelimit checks keys against one flat list whatever the level, so a `unit` written one indentation
 * too far out passes its key check and only fails later (or is silently ignored). We check per section and say
 * where a misplaced key belongs, which catches the same typos and the indentation mistakes too.
 */

export const TOP_KEYS = ['domain', 'descriptors', 'defaults', 'authz', 'valid_from', 'valid_until'] as const;
export const DEFAULTS_KEYS = ['algorithm', 'burst'] as const;
export const DESCRIPTOR_KEYS = [
  'key',
  'value',
  'rate_limit',
  'rate_limits',
  'descriptors',
  'shadow_mode',
  'quota_mode',
  'detailed_metric',
  'value_to_metric',
  'share_threshold',
  'metadata',
  'valid_from',
  'valid_until',
] as const;
export const RATE_LIMIT_KEYS = [
  'unit',
  'unit_multiplier',
  'window',
  'requests_per_unit',
  'soft_requests_per_unit',
  'unlimited',
  'name',
  'replaces',
  'algorithm',
  'burst',
  'on_limit',
  'throttling',
  'ban',
  'shares',
  'lease',
  'count_every_hit',
  'capacity',
  'predict_cost',
  // rules-time.md
  'calendar',
  'time_zone',
  'max_values',
  'on_max_values',
] as const;
export const REPLACES_KEYS = ['name'] as const;

const SECTIONS: readonly (readonly [string, readonly string[]])[] = [
  ['at the top of the file', TOP_KEYS],
  ['in a descriptor', DESCRIPTOR_KEYS],
  ['in rate_limit', RATE_LIMIT_KEYS],
];

/** Optimal string alignment distance (Levenshtein plus adjacent transpositions). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = [];
  for (let i = 0; i <= a.length; i++) d.push([i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 0; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/** The closest candidate, when it is close enough to be a likely typo. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const lower = word.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const dist = editDistance(lower, c);
    if (dist < bestDistance) {
      best = c;
      bestDistance = dist;
    }
  }
  const tolerance = Math.max(2, Math.floor(word.length / 3));
  return bestDistance <= tolerance ? best : undefined;
}

/**
 * Every key envoyproxy/ratelimit knows. It checks keys against this one flat set, wherever they stand, and
 * ignores a known key in the wrong place. So that its configs load unchanged, such a key is a warning here
 * (not an error), naming where it belongs; a key it does not know either stays an error.
 */
export const REFERENCE_KEYS: ReadonlySet<string> = new Set([
  'domain',
  'key',
  'value',
  'descriptors',
  'rate_limit',
  'unit',
  'unit_multiplier',
  'requests_per_unit',
  'soft_requests_per_unit',
  'unlimited',
  'shadow_mode',
  'quota_mode',
  'name',
  'replaces',
  'detailed_metric',
  'value_to_metric',
  'share_threshold',
  'metadata',
]);

/** The warning for a key envoyproxy/ratelimit accepts anywhere but that has no effect where it stands. */
export function ignoredKeyMessage(key: string): string {
  const where = SECTIONS.find(([, keys]) => keys.includes(key))?.[0];
  return `'${key}' has no effect here and is ignored, as envoyproxy/ratelimit ignores it${where ? ` ('${key}' belongs ${where})` : ''}`;
}

/** The message for a key that `allowed` does not contain. */
export function unknownKeyMessage(key: string, allowed: readonly string[]): string {
  const near = closest(key, allowed);
  if (near !== undefined) return `unknown key '${key}' (did you mean '${near}'?)`;
  for (const [where, keys] of SECTIONS) {
    if (keys !== allowed && keys.includes(key)) return `unknown key '${key}' here ('${key}' belongs ${where})`;
  }
  return `unknown key '${key}'; valid keys here: ${allowed.join(', ')}`;
}

/** `'x' is not one of a, b, c` plus a hint when x is a near miss. */
export function notOneOfMessage(value: string, allowed: readonly string[]): string {
  const near = closest(value, allowed);
  const hint = near !== undefined ? ` (did you mean '${near}'?)` : '';
  return `'${value}' is not one of ${allowed.join(', ')}${hint}`;
}

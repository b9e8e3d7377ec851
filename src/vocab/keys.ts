/**
 * The one place where counter keys are built (memory and Redis use the same strings).
 *
 *   <prefix>{<domain>|<key>=<value>|<key>=<value>...}:<algorithm>:<windowMs>
 *
 * - Collision-free: every component is escaped so that the separators `|` and `=`, the braces, `%` and `#`
 *   never appear raw inside a component; any other character outside printable ASCII is escaped too
 *   (`%<hex code point>.`), lone UTF-16 surrogates included. Escaping is injective, so distinct
 *   (domain, entries) never give the same key.
 * - Keyed by bytes: a value that arrived as bytes which are not UTF-8 holds each such byte as a lone
 *   surrogate U+DC80..U+DCFF (vocab/bytes.ts), escaped here as `%dc80.`..`%dcff.`; so values that differ only
 *   in such bytes keep distinct keys (a lossy decode to U+FFFD would merge them).
 * - Redis Cluster: the part between the braces is the hash tag, so every key of one descriptor lands on
 *   one slot (no `}` can occur inside it, since braces are escaped).
 * - Long identities: when the escaped tag is longer than MAX_TAG_LENGTH it is replaced by `#` and the
 *   base64url SHA-256 of the escaped tag (a raw `#` never starts an escaped tag, so the forms cannot meet).
 * - Algorithm and window are part of the key: changing `requests_per_unit` keeps the count, changing the
 *   algorithm or the window starts a fresh counter.
 */
import { createHash } from 'node:crypto';
import type { AlgorithmName } from './algorithm-names.js';
import type { DescriptorEntry } from './types.js';

export const MAX_TAG_LENGTH = 512;

const PLAIN = /^[\x21-\x7e]*$/;
const HAS_RESERVED = /[|={}%#]/;
const RESERVED = new Set(['|', '=', '{', '}', '%', '#']);

/** Escape one component; see the module comment. */
export function escapeComponent(text: string): string {
  if (PLAIN.test(text) && !HAS_RESERVED.test(text)) return text; // the common case, on every request
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const cp = text.codePointAt(i)!;
    const ch = String.fromCodePoint(cp);
    if (cp > 0xffff) i++; // a surrogate pair: skip its second half
    if (cp >= 0x21 && cp <= 0x7e && !RESERVED.has(ch)) out += ch;
    else out += `%${cp.toString(16)}.`;
  }
  return out;
}

/** The hash tag identifying one counted descriptor of one domain. */
export function counterTag(domain: string, entries: readonly DescriptorEntry[]): string {
  let tag = escapeComponent(domain);
  for (const e of entries) tag += `|${escapeComponent(e.key)}=${escapeComponent(e.value)}`;
  if (tag.length > MAX_TAG_LENGTH) tag = `#${createHash('sha256').update(tag).digest('base64url')}`;
  // Redis ignores an empty hash tag `{}`; `%.` is never produced by escaping, so it stays unique.
  return tag === '' ? '%.' : tag;
}

export function counterKey(prefix: string, domain: string, entries: readonly DescriptorEntry[], algorithm: AlgorithmName, windowMs: number): string {
  return tagKey(prefix, counterTag(domain, entries), algorithm, windowMs);
}

/** counterKey from a tag already built (counterTag, overflowTag). */
export function tagKey(prefix: string, tag: string, algorithm: AlgorithmName, windowMs: number): string {
  return `${prefix}{${tag}}:${algorithm}:${windowMs}`;
}

/**
 * The counter of a calendar limit (rules `calendar:`) under a tag: one key per calendar window, named by the
 * period, the zone and the window's start (epoch ms). A native counter key ends in `:<algorithm>:<digits>`, this
 * one in `:calendar:<period>:<zone>:<digits>`, so the forms cannot meet.
 */
export function calendarTagKey(prefix: string, tag: string, period: string, zone: string, startMs: number): string {
  return `${prefix}{${tag}}:calendar:${period}:${escapeComponent(zone)}:${startMs}`;
}

/**
 * The one counter every value past a limit's `max_values` shares in a window (on_max_values: overflow): one per
 * rule and limit, like the elastic aggregate. `%overflow|` never starts a counterTag (escapes are `%<hex>.` and
 * `o` is not a hex digit), so it cannot meet a client's counter.
 */
export function overflowTag(domain: string, ruleStatsKey: string): string {
  const tag = `%overflow|${escapeComponent(domain)}|${escapeComponent(ruleStatsKey)}`;
  return tag.length > MAX_TAG_LENGTH ? `#${createHash('sha256').update(tag).digest('base64url')}` : tag;
}

/**
 * envoyproxy/ratelimit's key layout (REDIS_KEY_FORMAT=envoy, fixed_window limits with a unit only), so that
 * a rolling update from the reference keeps and shares its counters (docs/switching-counters.md):
 *
 *   <prefix><domain>_<key>_<value>_<key>_<value>_..._<window start in whole seconds>
 *
 * Components are written raw, as the reference writes them: this layout is not collision-free (`_` may
 * occur inside a component), which is why it is an opt-in for compatibility and not the default.
 */
export function envoyCounterKey(prefix: string, domain: string, entries: readonly DescriptorEntry[], windowStartMs: number): string {
  let key = `${prefix}${domain}_`;
  for (const e of entries) key += `${e.key}_${e.value}_`;
  return `${key}${Math.floor(windowStartMs / 1000)}`;
}

/**
 * The key of a check's on_limit state (`degrade`: the degraded-hits counter; `backoff`: the consecutive
 * rejections), derived from the check's counter key so that it lands on the same Redis Cluster slot:
 * a native key keeps its hash tag and gains a suffix no counter key has (they end in digits). An envoy-format
 * key (no tag) is wrapped whole in one, so its slot is the slot of the key itself; one that already holds
 * braces keeps them and gains the suffix (same slot when it carries a valid tag of its own).
 */
export function onLimitKey(checkKey: string, kind: 'degrade' | 'backoff'): string {
  if (checkKey.includes('{') || checkKey.includes('}')) return `${checkKey}:${kind}`;
  return `{${checkKey}}:${kind}`;
}

/**
 * The ban key of a counter (throttling `ban`): the counter key plus `:ban`. Native counter keys carry their
 * `{hash tag}`, so the ban lands on the counter's Redis Cluster slot and one script reads both. (Limits with
 * throttling fields always use native keys, never envoyCounterKey.)
 */
export function banKey(counter: string): string {
  return `${counter}:ban`;
}

/**
 * The aggregate key of an elastic limit: one per rule (domain + the rule's stats key, its config path), not per
 * client value. `%elastic|` never starts a counterTag (escapes are `%<hex>.` and `l` is not a hex digit), so it
 * cannot meet a counter key. Its own hash tag: on Redis Cluster it is usually in another slot than the
 * clients' counters (see redis/elastic-cluster.ts).
 */
export function elasticKey(prefix: string, domain: string, ruleStatsKey: string, algorithm: AlgorithmName, windowMs: number): string {
  let tag = `%elastic|${escapeComponent(domain)}|${escapeComponent(ruleStatsKey)}`;
  if (tag.length > MAX_TAG_LENGTH) tag = `#${createHash('sha256').update(tag).digest('base64url')}`;
  return `${prefix}{${tag}}:${algorithm}:${windowMs}`;
}

/**
 * The keys of one capacity resource (src/capacity/redis-capacity.ts), under one hash tag (the escaped
 * resource id, hashed when long, as counter tags) so that a decision's keys are on one Redis Cluster node:
 *
 *   <prefix>capacity:{<resource>}:leases | :version | :since | :log | :expiries
 */
export function capacityKeys(prefix: string, resourceId: string): { leases: string; version: string; since: string; log: string; expiries: string } {
  let tag = escapeComponent(resourceId);
  if (tag.length > MAX_TAG_LENGTH) tag = `#${createHash('sha256').update(tag).digest('base64url')}`;
  const base = `${prefix}capacity:{${tag === '' ? '%.' : tag}}`;
  return { leases: `${base}:leases`, version: `${base}:version`, since: `${base}:since`, log: `${base}:log`, expiries: `${base}:expiries` };
}

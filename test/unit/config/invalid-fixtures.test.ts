/**
 * One fixture file per configuration failure (test/fixtures/config/invalid), each with the exact messages it must
 * produce: the file, line, column, field path and wording are part of the interface (operators grep for them,
 * editors jump to them). A fixture without an entry here fails the suite, so none can silently stop being checked.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { compileConfigFiles } from '../../../src/config/index.js';

const DIR = fileURLToPath(new URL('../../fixtures/config/invalid/', import.meta.url));
const read = (name: string): { name: string; text: string } => ({ name, text: readFileSync(DIR + name, 'utf8') });

function errorsOf(names: string[], mergeDomains = false): string[] {
  const result = compileConfigFiles(names.map(read), { mergeDomains });
  return result.ok ? [] : result.errors.map(String);
}

const EXPECTED: Record<string, string[]> = {
  'authz-bad-mask.yaml': [
    'authz-bad-mask.yaml:5:55: authz.rate_limits[0].actions[0].masked_remote_address.v4_prefix_mask_len: must be an integer from 0 to 32, not 33',
  ],
  'authz-bad-regex.yaml': [
    "authz-bad-regex.yaml:9:43: authz.rate_limits[0].actions[0].header_value_match.headers[0].safe_regex_match.regex: 'v(1|2' is not a valid RE2 regular expression: error parsing regexp: missing closing ): `v(1|2`",
  ],
  'authz-empty-actions.yaml': ['authz-empty-actions.yaml:4:16: authz.rate_limits[0].actions: must list at least one action'],
  'authz-header-matcher-two-specifiers.yaml': [
    'authz-header-matcher-two-specifiers.yaml:8:17: authz.rate_limits[0].actions[0].header_value_match.headers[0]: has exact_match and present_match; a header matcher takes at most one of string_match, exact_match, prefix_match, suffix_match, contains_match, safe_regex_match, present_match',
  ],
  'authz-matcher-without-name.yaml': ['authz-matcher-without-name.yaml:8:17: authz.rate_limits[0].actions[0].header_value_match.headers[0].name: is required'],
  'authz-missing-header-name.yaml': ['authz-missing-header-name.yaml:5:28: authz.rate_limits[0].actions[0].request_headers.header_name: is required'],
  'authz-missing-rate-limits.yaml': [
    "authz-missing-rate-limits.yaml:3:3: authz.rate_limit: unknown key 'rate_limit' (did you mean 'rate_limits'?)",
    'authz-missing-rate-limits.yaml:3:3: authz.rate_limits: is required: the list of {actions: [...]} that build the descriptors',
  ],
  'authz-no-matchers.yaml': ['authz-no-matchers.yaml:5:31: authz.rate_limits[0].actions[0].header_value_match.headers: must list at least one matcher'],
  'authz-regex-ignore-case.yaml': [
    'authz-regex-ignore-case.yaml:9:76: authz.rate_limits[0].actions[0].query_parameter_value_match.query_parameters[0].string_match.ignore_case: has no effect on safe_regex (use (?i) in the regex)',
  ],
  'authz-region-headers-not-a-list.yaml': [
    "authz-region-headers-not-a-list.yaml:5:29: authz.rate_limits[0].actions[0].region.headers: must be a list of header names, not the string 'cf-ipcountry'",
  ],
  'authz-string-match-two-kinds.yaml': [
    'authz-string-match-two-kinds.yaml:9:31: authz.rate_limits[0].actions[0].header_value_match.headers[0].string_match: has exact and prefix; a string matcher takes exactly one of exact, prefix, suffix, contains, safe_regex',
  ],
  'authz-too-many-actions.yaml': [
    'authz-too-many-actions.yaml:4:16: authz.rate_limits[0].actions: has 17 actions; a descriptor carries at most 16 entries (MAX_DESCRIPTOR_ENTRIES)',
  ],
  'authz-too-many-rate-limits.yaml': [
    'authz-too-many-rate-limits.yaml:4:5: authz.rate_limits: has 65 items; a request carries at most 64 descriptors (MAX_REQUEST_DESCRIPTORS)',
  ],
  'authz-two-actions-in-one.yaml': [
    'authz-two-actions-in-one.yaml:5:11: authz.rate_limits[0].actions[0]: an action has exactly one of remote_address, masked_remote_address, request_headers, query_parameters, generic_key, header_value_match, query_parameter_value_match, cookie, method, path, host, region; found remote_address, generic_key',
  ],
  'authz-unknown-action.yaml': [
    "authz-unknown-action.yaml:5:11: authz.rate_limits[0].actions[0].remote_adress: unknown action 'remote_adress' (did you mean 'remote_address'?)",
  ],
  'authz-unknown-key.yaml': [
    "authz-unknown-key.yaml:5:72: authz.rate_limits[0].actions[0].request_headers.skip_if_abesnt: unknown key 'skip_if_abesnt' (did you mean 'skip_if_absent'?)",
    "authz-unknown-key.yaml:6:7: authz.rate_limits[1].action: unknown key 'action' (did you mean 'actions'?)",
    'authz-unknown-key.yaml:6:7: authz.rate_limits[1].actions: is required: a list of at least one action',
  ],
  // throttling, ban, shares (docs/throttling.md)
  'throttling-unknown-mode.yaml': [
    "throttling-unknown-mode.yaml:7:19: descriptors[0].rate_limit.throttling: 'sof' is not one of hard, soft, elastic (did you mean 'soft'?)",
  ],
  'throttling-not-a-mode.yaml': [
    'throttling-not-a-mode.yaml:7:19: descriptors[0].rate_limit.throttling: must be hard, {soft: 10%} or {elastic: {capacity: N, max: M}}, not a list',
  ],
  'throttling-hard-with-value.yaml': [
    "throttling-hard-with-value.yaml:7:19: descriptors[0].rate_limit.throttling: must be hard, {soft: 10%} or {elastic: {capacity: N, max: M}}; 'hard' takes no value",
  ],
  'throttling-soft-without-share.yaml': [
    "throttling-soft-without-share.yaml:7:19: descriptors[0].rate_limit.throttling: must be hard, {soft: 10%} or {elastic: {capacity: N, max: M}}; 'soft' needs its settings",
  ],
  'soft-not-a-percentage.yaml': [
    'soft-not-a-percentage.yaml:7:26: descriptors[0].rate_limit.throttling.soft: must be a percentage like 10% or 12.5%, not the number 10',
  ],
  'soft-out-of-range.yaml': ['soft-out-of-range.yaml:7:26: descriptors[0].rate_limit.throttling.soft: 150% is out of range: must be above 0% and at most 100%'],
  'soft-on-token-bucket.yaml': [
    "soft-on-token-bucket.yaml:8:19: descriptors[0].rate_limit.throttling: soft throttling applies only to fixed_window, sliding_window_log and sliding_window_counter: token_bucket has no window to exceed; let more requests through with a larger 'burst' instead",
  ],
  'elastic-on-leaky-bucket.yaml': [
    "elastic-on-leaky-bucket.yaml:8:19: descriptors[0].rate_limit.throttling: elastic throttling applies only to fixed_window, sliding_window_log and sliding_window_counter: leaky_bucket has no window to exceed; let more requests through with a larger 'burst' instead",
  ],
  'elastic-missing-max.yaml': ['elastic-missing-max.yaml:7:29: descriptors[0].rate_limit.throttling.elastic: elastic needs max'],
  'elastic-not-a-mapping.yaml': [
    'elastic-not-a-mapping.yaml:7:29: descriptors[0].rate_limit.throttling.elastic: must be a mapping {capacity: N, max: M}, not the number 500',
  ],
  'elastic-max-not-above-limit.yaml': [
    'elastic-max-not-above-limit.yaml:7:50: descriptors[0].rate_limit.throttling.elastic.max: max (100) must be above requests_per_unit (100): it is how far a client may go above its own limit',
  ],
  'elastic-unknown-key.yaml': [
    "elastic-unknown-key.yaml:7:55: descriptors[0].rate_limit.throttling.elastic.maximum: unknown key 'maximum'; valid keys here: capacity, max",
  ],
  'ban-bad-duration.yaml': ["ban-bad-duration.yaml:7:12: descriptors[0].rate_limit.ban: 'forever' is not a duration like 500ms, 30s, 20m, 36h, 2d or 1w"],
  'ban-too-short.yaml': ["ban-too-short.yaml:7:12: descriptors[0].rate_limit.ban: '10ms' is shorter than the minimum ban of 1s"],
  'shares-out-of-order.yaml': [
    'shares-out-of-order.yaml:7:41: descriptors[0].rate_limit.shares.sheddable: the sheddable share must not be above the default share: critical ≥ default ≥ sheddable',
  ],
  'shares-zero.yaml': ['shares-zero.yaml:7:27: descriptors[0].rate_limit.shares.sheddable: 0% is out of range: must be above 0% and at most 100%'],
  'shares-unknown-class.yaml': [
    "shares-unknown-class.yaml:7:16: descriptors[0].rate_limit.shares.background: unknown key 'background'; valid keys here: critical, default, sheddable",
  ],
  'shares-not-a-mapping.yaml': [
    "shares-not-a-mapping.yaml:7:15: descriptors[0].rate_limit.shares: must be a mapping {critical: 100%, default: 80%, sheddable: 50%}, not the string '50%'",
  ],
  'degrade-with-ban.yaml': [
    "degrade-with-ban.yaml:7:12: descriptors[0].rate_limit.ban: a ban needs rejections, and on_limit action 'degrade' admits requests over the limit instead: use one or the other",
  ],
  'degrade-with-elastic.yaml': [
    "degrade-with-elastic.yaml:7:19: descriptors[0].rate_limit.throttling: elastic throttling and on_limit action 'degrade' both admit requests over the limit: use one or the other",
  ],
  'ban-with-unlimited.yaml': ["ban-with-unlimited.yaml:6:7: descriptors[0].rate_limit.ban: 'ban' has no meaning when unlimited"],
  'bad-boolean.yaml': ["bad-boolean.yaml:4:18: descriptors[0].shadow_mode: must be true or false, not the string 'true'"],
  'bad-unit.yaml': [
    "bad-unit.yaml:5:13: descriptors[0].rate_limit.unit: 'minit' is not one of second, minute, hour, day, week, month, year (did you mean 'minute'?)",
  ],
  'bad-window.yaml': ["bad-window.yaml:5:15: descriptors[0].rate_limit.window: '20x' is not a window like 500ms, 30s, 20m, 36h, 2d or 1w"],
  'burst-on-fixed-window.yaml': [
    'burst-on-fixed-window.yaml:7:7: descriptors[0].rate_limit.burst: burst applies only to token_bucket and leaky_bucket, not fixed_window',
  ],
  'burst-zero.yaml': ['burst-zero.yaml:8:14: descriptors[0].rate_limit.burst: must be an integer from 1 to 4294967295, not 0'],
  'defaults-unknown-algorithm.yaml': [
    "defaults-unknown-algorithm.yaml:3:14: defaults.algorithm: 'sliding_window' is not one of fixed_window, sliding_window_log, sliding_window_counter, token_bucket, leaky_bucket (did you mean 'sliding_window_log'?)",
    "defaults-unknown-algorithm.yaml:4:3: defaults.burts: unknown key 'burts' (did you mean 'burst'?)",
  ],
  'descriptors-not-a-list.yaml': ['descriptors-not-a-list.yaml:3:3: descriptors: must be a list of mappings, not a mapping'],
  'duplicate-composite-key.yaml': [
    "duplicate-composite-key.yaml:8:5: descriptors[1]: duplicate descriptor composite key 'edge.database_users' (first defined at duplicate-composite-key.yaml:3)",
  ],
  'duplicate-limit-in-list.yaml': [
    'duplicate-limit-in-list.yaml:7:9: descriptors[0].rate_limits[1]: duplicate limit: same algorithm and window as rate_limits[0]',
  ],
  'duplicate-nested-key.yaml': [
    "duplicate-nested-key.yaml:10:9: descriptors[0].descriptors[1]: duplicate descriptor composite key 'edge.message_type_marketing.to_number' (first defined at duplicate-nested-key.yaml:6)",
  ],
  'empty-domain.yaml': ['empty-domain.yaml:1:9: domain: config file cannot have empty domain'],
  'empty-file.yaml': ['empty-file.yaml:1:1: domain: config file cannot have empty domain'],
  'empty-key.yaml': ['empty-key.yaml:3:10: descriptors[0].key: descriptor has empty key'],
  'empty-rate-limits.yaml': ['empty-rate-limits.yaml:4:18: descriptors[0].rate_limits: must list at least one limit'],
  'extension-with-unlimited.yaml': ["extension-with-unlimited.yaml:6:7: descriptors[0].rate_limit.algorithm: 'algorithm' has no meaning when unlimited"],
  'list-of-non-maps.yaml': ["list-of-non-maps.yaml:7:5: descriptors[1]: list items must be mappings, not the string 'remote_address'"],
  'merge-not-a-mapping.yaml': [
    "merge-not-a-mapping.yaml:5:7: descriptors[0].rate_limit.unit: missing rate limit unit: set 'unit' (one of second, minute, hour, day, week, month, year) or 'window'",
    "merge-not-a-mapping.yaml:5:11: descriptors[0].rate_limit.<<: can only merge mappings, not the string 'second'",
  ],
  'metadata-not-a-mapping.yaml': ['metadata-not-a-mapping.yaml:4:15: descriptors[0].metadata: must be a mapping, not a list'],
  'misplaced-key.yaml': [
    "misplaced-key.yaml:6:7: descriptors[0].rate_limit.unit: missing rate limit unit: set 'unit' (one of second, minute, hour, day, week, month, year) or 'window'",
  ],
  'missing-domain.yaml': ['missing-domain.yaml:1:1: domain: config file cannot have empty domain'],
  'missing-key.yaml': ['missing-key.yaml:3:5: descriptors[0].key: descriptor has empty key'],
  'missing-unit.yaml': [
    "missing-unit.yaml:5:7: descriptors[0].rate_limit.unit: missing rate limit unit: set 'unit' (one of second, minute, hour, day, week, month, year) or 'window'",
  ],
  'non-string-key.yaml': ['non-string-key.yaml:4:5: descriptors[0]: key is not of type string: 10'],
  'not-a-mapping.yaml': ["not-a-mapping.yaml:1:1: a rules file must be a mapping with 'domain' and 'descriptors', not a list"],
  'rate-limit-and-rate-limits.yaml': ["rate-limit-and-rate-limits.yaml:7:5: descriptors[0].rate_limits: 'rate_limit' and 'rate_limits' are mutually exclusive"],
  'replaces-empty.yaml': ['replaces-empty.yaml:9:17: descriptors[0].rate_limit.replaces[0].name: should not have an empty replaces entry'],
  'replaces-not-maps.yaml': ["replaces-not-maps.yaml:7:18: descriptors[0].rate_limit.replaces[0]: list items must be mappings, not the string 'per_ip'"],
  'replaces-self.yaml': ['replaces-self.yaml:10:17: descriptors[0].rate_limit.replaces[0].name: replaces should not contain name of same descriptor'],
  'rpu-missing.yaml': [
    'rpu-missing.yaml:5:7: descriptors[0].rate_limit.requests_per_unit: requests_per_unit is missing: without it the limit is 0 and rejects every request (as envoyproxy/ratelimit reads it); write requests_per_unit: 0 to block on purpose, or unlimited: true for no limit',
    'rpu-missing.yaml:9:9: descriptors[1].rate_limits[1].requests_per_unit: requests_per_unit is missing: without it the limit is 0 and rejects every request (as envoyproxy/ratelimit reads it); write requests_per_unit: 0 to block on purpose, or unlimited: true for no limit',
  ],
  'rpu-negative.yaml': ['rpu-negative.yaml:6:26: descriptors[0].rate_limit.requests_per_unit: must be an integer from 0 to 4294967295, not -1'],
  'rpu-not-a-number.yaml': [
    "rpu-not-a-number.yaml:6:26: descriptors[0].rate_limit.requests_per_unit: must be an integer from 0 to 4294967295, not the string 'lots'",
  ],
  'rpu-quoted.yaml': ["rpu-quoted.yaml:6:26: descriptors[0].rate_limit.requests_per_unit: must be an integer from 0 to 4294967295, not the string '10'"],
  'rpu-too-big.yaml': ['rpu-too-big.yaml:6:26: descriptors[0].rate_limit.requests_per_unit: must be an integer from 0 to 4294967295, not 4294967296'],
  'several-errors.yaml': [
    "several-errors.yaml:5:13: descriptors[0].rate_limit.unit: 'minit' is not one of second, minute, hour, day, week, month, year (did you mean 'minute'?)",
    'several-errors.yaml:6:26: descriptors[0].rate_limit.requests_per_unit: must be an integer from 0 to 4294967295, not -5',
    "several-errors.yaml:8:5: descriptors[1].shadow_mod: unknown key 'shadow_mod' (did you mean 'shadow_mode'?)",
    'several-errors.yaml:10:14: descriptors[1].descriptors[0].key: descriptor has empty key',
    "several-errors.yaml:14:22: descriptors[1].descriptors[0].rate_limit.algorithm: 'gcra' is not one of fixed_window, sliding_window_log, sliding_window_counter, token_bucket, leaky_bucket",
    "several-errors.yaml:15:5: descriptors[2]: duplicate descriptor composite key 'edge.user' (first defined at several-errors.yaml:7)",
  ],
  'share-threshold-not-wildcard.yaml': [
    "share-threshold-not-wildcard.yaml:5:22: descriptors[0].share_threshold: share_threshold can only be used with wildcard values (containing '*'), but found key 'path_/files'",
  ],
  'unit-with-unlimited.yaml': ['unit-with-unlimited.yaml:6:13: descriptors[0].rate_limit.unit: should not specify rate limit unit when unlimited'],
  'unknown-algorithm.yaml': [
    "unknown-algorithm.yaml:7:18: descriptors[0].rate_limit.algorithm: 'token_buckets' is not one of fixed_window, sliding_window_log, sliding_window_counter, token_bucket, leaky_bucket (did you mean 'token_bucket'?)",
  ],
  'unknown-key-descriptor.yaml': ["unknown-key-descriptor.yaml:4:5: descriptors[0].rate_limt: unknown key 'rate_limt' (did you mean 'rate_limit'?)"],
  'unknown-key-rate-limit.yaml': [
    'unknown-key-rate-limit.yaml:5:7: descriptors[0].rate_limit.requests_per_unit: requests_per_unit is missing: without it the limit is 0 and rejects every request (as envoyproxy/ratelimit reads it); write requests_per_unit: 0 to block on purpose, or unlimited: true for no limit',
    "unknown-key-rate-limit.yaml:6:7: descriptors[0].rate_limit.requests_per_uni: unknown key 'requests_per_uni' (did you mean 'requests_per_unit'?)",
  ],
  'unknown-key-top.yaml': ["unknown-key-top.yaml:2:1: descriptor: unknown key 'descriptor' (did you mean 'descriptors'?)"],
  'unlimited-in-list.yaml': [
    "unlimited-in-list.yaml:7:9: descriptors[0].rate_limits[1].unlimited: 'unlimited' is not allowed inside rate_limits; write rate_limit: {unlimited: true} instead",
  ],
  'window-and-unit.yaml': ["window-and-unit.yaml:6:7: descriptors[0].rate_limit.window: 'window' and 'unit' are mutually exclusive"],
  'window-too-long.yaml': [
    'window-too-long.yaml:5:15: descriptors[0].rate_limit.window: window must be a whole number of ms from 1 to 34359738368 (about 397 days)',
  ],
  'burst-refill-too-long.yaml': [
    'burst-refill-too-long.yaml:8:14: descriptors[0].rate_limit.burst: burst × window / requests_per_unit (the time to refill an empty bucket) must not exceed 2^48 ms',
  ],
  'zero-unit-multiplier.yaml': ['zero-unit-multiplier.yaml:7:24: descriptors[0].rate_limit.unit_multiplier: unit_multiplier must be at least 1'],
  'soft-not-below-hard.yaml': [
    'soft-not-below-hard.yaml:7:31: descriptors[0].rate_limit.soft_requests_per_unit: soft_requests_per_unit (20) must be below requests_per_unit (20)',
  ],
  'multiplier-with-window.yaml': [
    "multiplier-with-window.yaml:6:7: descriptors[0].rate_limit.unit_multiplier: 'unit_multiplier' goes with 'unit', not with 'window'",
  ],
  'reference-name-collision.yaml': [
    "reference-name-collision.yaml:5:5: descriptors[1]: duplicate descriptor composite key 'edge.a_b' (first defined at reference-name-collision.yaml:3)",
  ],
  'window-too-short.yaml': ["window-too-short.yaml:5:15: descriptors[0].rate_limit.window: '500ms' is shorter than the minimum window of 1s"],
  'yaml-syntax.yaml': ['yaml-syntax.yaml:5:1: YAML syntax error: Flow map in block collection must be sufficiently indented and end with a }'],
  'on-limit-bad-content-type.yaml': [
    "on-limit-bad-content-type.yaml:8:23: descriptors[0].rate_limit.on_limit.content_type: 'json' is not a media type like application/json or text/plain; charset=utf-8",
  ],
  'on-limit-bad-header-name.yaml': [
    "on-limit-bad-header-name.yaml:8:19: descriptors[0].rate_limit.on_limit.headers.x limit: 'x limit' is not a valid header name",
  ],
  'on-limit-content-type-without-body.yaml': [
    'on-limit-content-type-without-body.yaml:8:9: descriptors[0].rate_limit.on_limit.content_type: content_type needs a body',
  ],
  'on-limit-degrade-max-negative.yaml': [
    'on-limit-degrade-max-negative.yaml:7:87: descriptors[0].rate_limit.on_limit.degrade_max: must be an integer from 0 to 4294967295, not -1',
  ],
  'on-limit-delay-window-algorithm.yaml': [
    'on-limit-delay-window-algorithm.yaml:7:26: descriptors[0].rate_limit.on_limit.action: delay applies only to token_bucket and leaky_bucket, not fixed_window',
  ],
  'on-limit-delay-without-max-delay.yaml': [
    'on-limit-delay-without-max-delay.yaml:9:9: descriptors[0].rate_limit.on_limit.max_delay: action delay needs max_delay (e.g. 250ms): the longest a request may wait for its slot',
  ],
  'on-limit-duplicate-header.yaml': [
    "on-limit-duplicate-header.yaml:8:32: descriptors[0].rate_limit.on_limit.headers.x-reason: header 'x-reason' is listed twice",
  ],
  'on-limit-field-of-other-action.yaml': [
    "on-limit-field-of-other-action.yaml:9:9: descriptors[0].rate_limit.on_limit.degrade_max: 'degrade_max' applies only to action degrade, not reject",
  ],
  'on-limit-header-not-ascii.yaml': [
    'on-limit-header-not-ascii.yaml:8:29: descriptors[0].rate_limit.on_limit.headers.x-reason: header values must be visible ASCII',
  ],
  'on-limit-headers-not-a-mapping.yaml': [
    'on-limit-headers-not-a-mapping.yaml:8:18: descriptors[0].rate_limit.on_limit.headers: must be a mapping of header name to value, not a list',
  ],
  'on-limit-json-body-invalid.yaml': [
    'on-limit-json-body-invalid.yaml:9:15: descriptors[0].rate_limit.on_limit.body: a JSON body: not valid JSON once its placeholders are filled: Expected double-quoted property name in JSON at position 18 (line 1 column 19)',
  ],
  'on-limit-json-body-unquoted.yaml': [
    'on-limit-json-body-unquoted.yaml:9:15: descriptors[0].rate_limit.on_limit.body: a JSON body: {{descriptor}} must stand inside a JSON string ("...") so that its value is escaped',
  ],
  'on-limit-max-delay-too-long.yaml': ["on-limit-max-delay-too-long.yaml:8:44: descriptors[0].rate_limit.on_limit.max_delay: '20s' is not from 1ms to 10s"],
  'on-limit-not-a-mapping.yaml': ["on-limit-not-a-mapping.yaml:7:17: descriptors[0].rate_limit.on_limit: must be a mapping, not the string 'reject'"],
  'on-limit-redirect-bad-status.yaml': [
    'on-limit-redirect-bad-status.yaml:7:78: descriptors[0].rate_limit.on_limit.status: a redirect status must be one of 302, 303, 307, not 301',
  ],
  'predict-cost.yaml': [
    'predict-cost.yaml:8:7: descriptors[0].rate_limit.predict_cost: predict_cost cannot go with algorithm token_bucket (only fixed_window and sliding_window_counter keep a count a settlement may run past the limit)',
    "predict-cost.yaml:10:71: descriptors[1].rate_limit.predict_cost.initial: predict_cost needs 'initial': the prediction until a cost has been settled",
    'predict-cost.yaml:12:81: descriptors[2].rate_limit.predict_cost.initial: must be an integer from 1 to 1000, not 2000',
    "predict-cost.yaml:12:95: descriptors[2].rate_limit.predict_cost.window: '5s' is not from 10s to 1d",
    'predict-cost.yaml:12:105: descriptors[2].rate_limit.predict_cost.clip: must be an integer from 1 to 4294967295, not 0',
    "predict-cost.yaml:12:108: descriptors[2].rate_limit.predict_cost.cap: unknown key 'cap' (did you mean 'clip'?)",
    'predict-cost.yaml:15:49: descriptors[3].rate_limits[0].predict_cost: predict_cost goes in rate_limit, not in a rate_limits list (one prediction per rule)',
  ],
  'count-every-hit-bucket.yaml': [
    'count-every-hit-bucket.yaml:8:24: descriptors[0].rate_limit.count_every_hit: count_every_hit cannot go with algorithm token_bucket (only fixed_window and sliding_window_counter keep a count that may run past the limit)',
    'count-every-hit-bucket.yaml:14:24: descriptors[1].rate_limit.count_every_hit: count_every_hit cannot go with lease (leased units are decided away from the store)',
  ],
  'on-limit-redirect-location-not-ascii.yaml': [
    'on-limit-redirect-location-not-ascii.yaml:7:46: descriptors[0].rate_limit.on_limit.location: a location must be visible ASCII without spaces (percent-encode other characters)',
  ],
  'on-limit-redirect-without-location.yaml': [
    'on-limit-redirect-without-location.yaml:8:9: descriptors[0].rate_limit.on_limit.location: action redirect needs a location',
  ],
  'on-limit-reserved-header.yaml': [
    "on-limit-reserved-header.yaml:8:19: descriptors[0].rate_limit.on_limit.headers.retry-after: 'retry-after' is set by the service; it cannot be set here",
  ],
  'on-limit-retry-base-too-short.yaml': [
    "on-limit-retry-base-too-short.yaml:7:58: descriptors[0].rate_limit.on_limit.retry_base: '500ms' is not from 1s to 1d",
  ],
  'on-limit-retry-base-without-backoff.yaml': [
    "on-limit-retry-base-without-backoff.yaml:7:32: descriptors[0].rate_limit.on_limit.retry_base: 'retry_base' applies only to retry exponential_backoff, not fixed",
  ],
  'on-limit-retry-cap-below-base.yaml': [
    'on-limit-retry-cap-below-base.yaml:7:74: descriptors[0].rate_limit.on_limit.retry_cap: retry_cap must not be below retry_base',
  ],
  'on-limit-status-out-of-range.yaml': [
    'on-limit-status-out-of-range.yaml:7:26: descriptors[0].rate_limit.on_limit.status: must be an integer from 400 to 599, not 200',
  ],
  'on-limit-unclosed-placeholder.yaml': [
    "on-limit-unclosed-placeholder.yaml:8:15: descriptors[0].rate_limit.on_limit.body: unclosed placeholder: '{{' without '}}'",
  ],
  'on-limit-unknown-action.yaml': [
    "on-limit-unknown-action.yaml:7:26: descriptors[0].rate_limit.on_limit.action: 'dely' is not one of reject, delay, degrade, redirect (did you mean 'delay'?)",
  ],
  'on-limit-unknown-key.yaml': [
    'on-limit-unknown-key.yaml:8:17: descriptors[0].rate_limit.on_limit.max_delay: action delay needs max_delay (e.g. 250ms): the longest a request may wait for its slot',
    "on-limit-unknown-key.yaml:8:33: descriptors[0].rate_limit.on_limit.max_dealy: unknown key 'max_dealy' (did you mean 'max_delay'?)",
  ],
  'on-limit-unknown-placeholder.yaml': [
    "on-limit-unknown-placeholder.yaml:8:15: descriptors[0].rate_limit.on_limit.body: unknown placeholder '{{retry}}'; known: {{retry_after}}, {{limit}}, {{remaining}}, {{window}}, {{name}}, {{domain}}, {{descriptor}}, {{reset_at}}",
  ],
  'on-limit-unknown-retry.yaml': [
    "on-limit-unknown-retry.yaml:7:25: descriptors[0].rate_limit.on_limit.retry: 'exponential' is not one of fixed, exponential_backoff, none",
  ],
  'on-limit-with-unlimited.yaml': ["on-limit-with-unlimited.yaml:6:7: descriptors[0].rate_limit.on_limit: 'on_limit' has no meaning when unlimited"],
  'lease-with-ban.yaml': [
    'lease-with-ban.yaml:8:14: descriptors[0].rate_limit.lease: a leased limit is decided from local units, without the store, so it cannot have ban (bans are kept in the store): drop the lease or these',
  ],
  'lease-with-shares-and-backoff.yaml': [
    "lease-with-shares-and-backoff.yaml:9:14: descriptors[0].rate_limit.lease: a leased limit is decided from local units, without the store, so it cannot have shares (the ceiling changes with each request's class), on_limit retry exponential_backoff (its count is kept in the store): drop the lease or these",
  ],
  'lease-on-sliding-window-log.yaml': [
    'lease-on-sliding-window-log.yaml:8:7: descriptors[0].rate_limit.lease: lease is not available with sliding_window_log: sliding_window_log records the time of every admitted hit, and leased units are counted when claimed, not when used, so it would stop being exact (use sliding_window_counter)',
  ],
  'lease-on-leaky-bucket.yaml': [
    'lease-on-leaky-bucket.yaml:8:7: descriptors[0].rate_limit.lease: lease is not available with leaky_bucket: leaky_bucket spaces requests evenly, and a replica holding leased units would admit them in a burst (use token_bucket)',
  ],
  'lease-bad-size.yaml': [
    "lease-bad-size.yaml:7:21: descriptors[0].rate_limit.lease.size: must be a count from 1 to 4294967295 (e.g. 50) or a percentage of requests_per_unit above 0% and at most 100% (e.g. 5%), not '150%'",
  ],
  'lease-bad-ttl.yaml': [
    "lease-bad-ttl.yaml:7:30: descriptors[0].rate_limit.lease.ttl: must be a duration from 1ms to 1h like 250ms, 1s or 2m, not '2 seconds'",
  ],
  'lease-with-unlimited.yaml': ["lease-with-unlimited.yaml:6:7: descriptors[0].rate_limit.lease: 'lease' has no meaning when unlimited"],
  'lease-unknown-key.yaml': ["lease-unknown-key.yaml:7:15: descriptors[0].rate_limit.lease.sise: unknown key 'sise' (did you mean 'size'?)"],
  'lease-not-a-mapping.yaml': ["lease-not-a-mapping.yaml:7:14: descriptors[0].rate_limit.lease: must be a mapping, not the string '5%'"],
};

describe('invalid rules fixtures', () => {
  it.each(Object.entries(EXPECTED))('%s', (name, messages) => {
    expect(errorsOf([name])).toEqual(messages);
  });

  it('has an expectation for every single-file fixture', () => {
    const files = readdirSync(DIR).filter((f) => f.endsWith('.yaml') && !f.startsWith('dup-domain-'));
    expect(files.sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  it('rejects the same domain in two files, naming both', () => {
    expect(errorsOf(['dup-domain-a.yaml', 'dup-domain-b.yaml'])).toEqual([
      "dup-domain-b.yaml:2:9: domain: duplicate domain 'shared' in config file (also in dup-domain-a.yaml; set MERGE_DOMAIN_CONFIG=true to merge them)",
    ]);
  });

  it('rejects a second authz block for a domain merged from two files, naming the first', () => {
    const result = compileConfigFiles(['dup-domain-authz-a.yaml', 'dup-domain-authz-b.yaml'].map(read), { mergeDomains: true });
    expect(result.ok ? [] : result.errors.map(String)).toEqual([
      "dup-domain-authz-b.yaml:5:1: authz: domain 'merged' already has an authz block (dup-domain-authz-a.yaml:2); keep a domain's authz block in one of its files",
    ]);
  });

  it('merges the same domain in two files when asked to', () => {
    const result = compileConfigFiles(['dup-domain-a.yaml', 'dup-domain-b.yaml'].map(read), { mergeDomains: true });
    expect(result.ok).toBe(true);
  });

  it('reports the errors of every file, in file order, in one pass', () => {
    const messages = errorsOf(['bad-unit.yaml', 'several-errors.yaml', 'yaml-syntax.yaml']);
    expect(messages.map((m) => m.split(':')[0])).toEqual(['bad-unit.yaml', ...Array<string>(6).fill('several-errors.yaml'), 'yaml-syntax.yaml']);
  });

  it('exposes the parts of each error', () => {
    const result = compileConfigFiles([read('bad-unit.yaml')], { mergeDomains: false });
    if (result.ok) throw new Error('expected errors');
    const [error] = result.errors;
    expect(error).toMatchObject({
      file: 'bad-unit.yaml',
      line: 5,
      column: 13,
      path: 'descriptors[0].rate_limit.unit',
      name: 'ConfigError',
    });
    expect(error).toBeInstanceOf(Error);
    expect(error!.message).toBe(String(error));
  });
});

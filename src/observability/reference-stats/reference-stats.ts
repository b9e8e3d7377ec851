/**
 * envoyproxy/ratelimit's stats, under its names, for its users' sinks (statsd, DogStatsD, a statsd_exporter
 * mapping):
 *   ratelimit.service.rate_limit.<stats key>.total_hits|over_limit|near_limit|within_limit|shadow_mode
 *   ratelimit.service.call.should_rate_limit.redis_error|service_error
 *   ratelimit.service.config_load_success|config_load_error
 *   ratelimit_server.<gRPC method>.total_requests (counter) and .response_time (timer, ms)
 * EXTRA_TAGS ride at the end of every name as `.__key=value`, sorted by key, `.`, `:` and `|` in a value
 * made `_` (the form the reference's stats library serializes tags in; its DogStatsD sink makes tags of them). Counters are added up and handed to the sinks by `flush` (each sink
 * decides when); timers go out as they happen. Stats keys that come from requests (detailed_metric,
 * value_to_metric) are admitted up to `maxKeys` distinct names; past that they count under the key `other`.
 */
import type { DescriptorReport } from '../../core/observer.js';
import type { StatSink } from './stat-sink.js';

const RULE_STATS = ['total_hits', 'over_limit', 'near_limit', 'within_limit', 'shadow_mode'] as const;
const IPV4 = /\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}/g;

/** A stats key as the reference writes it into a stat name: `:` and `|` become `_`, an IPv4 address's dots too. */
export function sanitizeStatName(s: string): string {
  return s.replace(/[:|]/g, '_').replace(IPV4, (ip) => ip.replaceAll('.', '_'));
}

export interface ReferenceStatsOptions {
  /** EXTRA_TAGS, in order. */
  readonly extraTags?: readonly (readonly [string, string])[];
  /** Distinct per-rule stat names kept before folding into `other`. */
  readonly maxKeys?: number;
}

export class ReferenceStats {
  private readonly pending = new Map<string, number>();
  private readonly ruleNames = new Map<string, readonly string[]>();
  private readonly callNames = new Map<string, readonly [string, string]>();
  private readonly service = 'ratelimit.service';
  private readonly server = 'ratelimit_server';
  private readonly tags: string;
  private readonly maxKeys: number;

  private readonly sinks: readonly StatSink[];

  constructor(
    private readonly live: StatSink | undefined,
    private readonly batched: readonly StatSink[],
    options: ReferenceStatsOptions = {},
  ) {
    this.sinks = live === undefined ? batched : [live, ...batched];
    this.tags = [...(options.extraTags ?? [])]
      .filter(([k, v]) => k !== '' && v !== '')
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `.__${k}=${v.replace(/[.:|]/g, '_')}`)
      .join('');
    this.maxKeys = options.maxKeys ?? 10_000;
  }

  /** One descriptor's hits, as the reference counts them. */
  onDescriptor(r: DescriptorReport): void {
    if (r.hits === 0) return; // the reference's stats never send a counter that did not grow
    const names = this.ruleNamesOf(r.statsKey);
    const add = (i: number) => this.add(names[i]!, r.hits);
    add(0);
    add(r.overLimit ? 1 : 3);
    if (r.nearLimit) add(2);
    if (r.shadowMode) add(4);
  }

  /** One unary gRPC call answered: `method` is the method's last path part (ShouldRateLimit, Check), `ext_authz.Check` written `ext_authz_Check`. */
  onCall(method: string, seconds: number): void {
    let names = this.callNames.get(method);
    if (names === undefined) {
      const m = method.replaceAll('.', '_');
      names = [`${this.server}.${m}.total_requests${this.tags}`, `${this.server}.${m}.response_time${this.tags}`];
      if (this.callNames.size < 64) this.callNames.set(method, names);
    }
    this.add(names[0], 1);
    const ms = seconds * 1000;
    for (const s of this.sinks) s.timer(names[1], ms);
  }

  onConfigLoad(ok: boolean): void {
    this.add(`${this.service}.${ok ? 'config_load_success' : 'config_load_error'}${this.tags}`, 1);
  }

  /** A ShouldRateLimit call that failed: the store (redis_error) or the request or service (service_error). */
  onShouldRateLimitError(kind: 'redis_error' | 'service_error'): void {
    this.add(`${this.service}.call.should_rate_limit.${kind}${this.tags}`, 1);
  }

  /** Hands the counters' growth since the last flush to the sinks. */
  flush(): void {
    if (this.pending.size === 0) return;
    for (const [name, value] of this.pending) for (const s of this.batched) s.counter(name, value);
    this.pending.clear();
  }

  private add(name: string, n: number): void {
    this.live?.counter(name, n);
    if (this.batched.length > 0) this.pending.set(name, (this.pending.get(name) ?? 0) + n);
  }

  private ruleNamesOf(statsKey: string): readonly string[] {
    let names = this.ruleNames.get(statsKey);
    if (names !== undefined) return names;
    let key = sanitizeStatName(statsKey);
    if (this.ruleNames.size >= this.maxKeys) key = `${key.split('.')[0]}.other`;
    names = RULE_STATS.map((stat) => `${this.service}.rate_limit.${key}.${stat}${this.tags}`);
    if (this.ruleNames.size < this.maxKeys) this.ruleNames.set(statsKey, names);
    return names;
  }
}

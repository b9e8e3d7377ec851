/**
 * The reference's stats sent to a statsd server (USE_STATSD) or a DogStatsD agent (USE_DOG_STATSD) by
 * hot-shots, loaded only when one of them is on. Plain statsd keeps EXTRA_TAGS in the names (`.__key=value`),
 * as the reference's statsd sink sends them; DogStatsD makes them tags (`|#key:value`) and then applies the
 * mogrifiers (USE_DOG_STATSD_MOGRIFIERS: the first whose pattern matches gives the name and more tags).
 * Sends are buffered (one packet or write per flush, 1432 bytes at most); a server that is down or refuses
 * costs one log line per outage window, never a queue that grows.
 */
import { RE2JS } from 're2js';
import type { StatSink } from './stat-sink.js';

export interface StatsdOptions {
  readonly host: string;
  readonly port: number;
  readonly protocol: 'tcp' | 'udp';
  readonly dogStatsd: boolean;
  readonly mogrifiers: readonly Mogrifier[];
  /** Called at most once per ERROR_LOG_MS with the error that made sends fail. */
  readonly onError: (message: string) => void;
}

export interface Mogrifier {
  readonly pattern: RE2JS;
  readonly name: string;
  readonly tags: readonly (readonly [string, string])[];
}

const ERROR_LOG_MS = 600_000;
const MAX_BUFFER = 1432;

/**
 * The mogrifiers named by USE_DOG_STATSD_MOGRIFIERS, each from DOG_STATSD_MOGRIFIER_<NAME>_PATTERN, _NAME and
 * _TAGS (`key:value,key2:value2`; `$n` in the name and values is the pattern's n-th group).
 */
export function readMogrifiers(names: readonly string[], env: Readonly<Record<string, string | undefined>>): Mogrifier[] {
  return names.map((m) => {
    const v = (part: string) => env[`DOG_STATSD_MOGRIFIER_${m}_${part}`] ?? '';
    const pattern = v('PATTERN');
    if (pattern === '') throw new Error(`DOG_STATSD_MOGRIFIER_${m}_PATTERN is not set (mogrifier ${m} of USE_DOG_STATSD_MOGRIFIERS)`);
    let re: RE2JS;
    try {
      re = RE2JS.compile(pattern);
    } catch (err) {
      throw new Error(`DOG_STATSD_MOGRIFIER_${m}_PATTERN: invalid regex '${pattern}': ${(err as Error).message}`);
    }
    const name = v('NAME');
    if (name === '') throw new Error(`DOG_STATSD_MOGRIFIER_${m}_NAME is not set (mogrifier ${m} of USE_DOG_STATSD_MOGRIFIERS)`);
    const tags = v('TAGS')
      .split(',')
      .filter((t) => t.trim() !== '')
      .map((t): [string, string] => {
        const i = t.indexOf(':');
        if (i <= 0 || i === t.length - 1) throw new Error(`DOG_STATSD_MOGRIFIER_${m}_TAGS: '${t}' is not key:value`);
        return [t.slice(0, i), t.slice(i + 1)];
      });
    return { pattern: re, name, tags };
  });
}

/** `name.__k=v.__k2=v2` into `name` and `k:v`, `k2:v2`. */
function separateTags(stat: string): [string, string[]] {
  const parts = stat.split('.__');
  const tags: string[] = [];
  for (const p of parts.slice(1)) {
    const i = p.indexOf('=');
    if (i >= 0) tags.push(`${p.slice(0, i)}:${p.slice(i + 1)}`);
  }
  return [parts[0]!, tags];
}

function mogrify(stat: string, mogrifiers: readonly Mogrifier[]): [string, string[]] {
  const [name, tags] = separateTags(stat);
  for (const m of mogrifiers) {
    const matcher = m.pattern.matcher(name);
    if (!matcher.find()) continue;
    const groups = Array.from({ length: matcher.groupCount() + 1 }, (_, i) => matcher.group(i) ?? '');
    const fill = (s: string) => s.replace(/\$\d+/g, (ref) => groups[Number(ref.slice(1))] ?? ref);
    return [fill(m.name), [...tags, ...m.tags.map(([k, v]) => `${k}:${fill(v)}`)]];
  }
  return [name, tags];
}

/** Starts the client (hot-shots is imported here, so only when statsd is on). */
export async function createStatsdSink(o: StatsdOptions): Promise<StatSink & { close(): Promise<void> }> {
  const { StatsD } = await import('hot-shots');
  let lastLog = -Infinity;
  const client = new StatsD({
    host: o.host,
    port: o.port,
    protocol: o.protocol,
    maxBufferSize: MAX_BUFFER,
    bufferFlushInterval: 1000,
    tcpGracefulErrorHandling: true,
    tcpGracefulRestartRateLimit: 1000,
    cacheDns: true,
    errorHandler: (err) => {
      const now = Date.now();
      if (now - lastLog < ERROR_LOG_MS) return;
      lastLog = now;
      o.onError(`statsd ${o.protocol}://${o.host}:${o.port}: ${err.message}`);
    },
  });
  const names = new Map<string, [string, string[]]>();
  const split = (stat: string): [string, string[] | undefined] => {
    if (!o.dogStatsd) return [stat, undefined];
    let r = names.get(stat);
    if (r === undefined) {
      r = mogrify(stat, o.mogrifiers);
      if (names.size >= 10_000) names.clear();
      names.set(stat, r);
    }
    return r;
  };
  return {
    counter(stat, value) {
      const [name, tags] = split(stat);
      client.increment(name, value, tags);
    },
    gauge(stat, value) {
      const [name, tags] = split(stat);
      client.gauge(name, value, tags);
    },
    timer(stat, ms) {
      const [name, tags] = split(stat);
      client.timing(name, ms, tags);
    },
    close: () => new Promise<void>((resolve) => client.close(() => resolve())),
  };
}

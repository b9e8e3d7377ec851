/** Go's time.ParseDuration text, as envoyproxy/ratelimit's settings (envconfig) read their durations. */
const GO_UNITS_MS: Readonly<Record<string, number>> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A Go duration (`10s`, `500ms`, `1m30s`, `0`) in milliseconds, as the reference's envconfig reads it. */
export function parseGoDuration(raw: string): number {
  const s = raw.trim();
  if (s === '0') return 0;
  const parts = [...s.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/g)];
  if (s === '' || parts.map((p) => p[0]).join('') !== s) throw new Error(`'${raw}' is not a duration such as 500ms, 10s or 1m30s`);
  const ms = parts.reduce((sum, p) => sum + Number(p[1]) * GO_UNITS_MS[p[2]!]!, 0);
  if (!Number.isFinite(ms) || ms > 2 ** 31 - 1) throw new Error(`'${raw}' is too long`);
  return Math.round(ms);
}

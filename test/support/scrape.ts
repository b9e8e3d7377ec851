/**
 * Reads the service's Prometheus text from GET /metrics (as a scraper does) into sample → value, so tests and
 * the soak script can check counters and gauges of a running process (late answers, RSS, event-loop delay).
 */
export type Samples = Map<string, number>;

export async function scrapeMetrics(httpAddress: string, timeoutMs = 2000): Promise<Samples> {
  const res = await fetch(`http://${httpAddress}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  return parseMetrics(await res.text());
}

/** `name{labels} value` lines → map keyed by `name{labels}` (labels as written); comments skipped. */
export function parseMetrics(text: string): Samples {
  const out: Samples = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    if (space < 0) continue;
    out.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return out;
}

/** Sum of every sample of `name` (all label sets); 0 when the metric does not exist. */
export function total(samples: Samples, name: string): number {
  let sum = 0;
  for (const [key, value] of samples) if (key === name || key.startsWith(`${name}{`)) sum += value;
  return sum;
}

/** The one sample `name` without labels, or undefined when absent. */
export function gauge(samples: Samples, name: string): number | undefined {
  return samples.get(name);
}

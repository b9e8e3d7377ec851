/**
 * Helpers for the Rate Limit Quota Service tests: the Envoy config and rules published in docs/rlqs.md (read
 * from the page, so that the tests run what a reader pastes), and paced HTTP traffic that counts answers.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '../..');

/** The fenced block that follows `<!-- marker` in docs/rlqs.md. */
export function rlqsDocBlock(marker: 'rlqs-envoy-config' | 'rlqs-rules'): string {
  const page = readFileSync(join(ROOT, 'docs/rlqs.md'), 'utf8');
  const at = page.indexOf(`<!-- ${marker}`);
  if (at < 0) throw new Error(`docs/rlqs.md has no <!-- ${marker} --> block`);
  const m = /```yaml\n([\s\S]*?)```/.exec(page.slice(at));
  if (!m) throw new Error(`docs/rlqs.md: no yaml block after <!-- ${marker} -->`);
  return m[1]!;
}

export interface PacedResult {
  /** Answers by status, and the admitted (200) ones per whole second since the start. */
  readonly byStatus: Map<number, number>;
  readonly admittedPerSecond: number[];
  readonly sent: number;
}

/**
 * Sends `ratePerS` requests per second to `url` for `durationMs`, on a fixed schedule (not waiting for the
 * answers; at most 64 in flight, later ones are skipped and counted as status 0), and counts the answers.
 */
export async function pacedTraffic(url: string, ratePerS: number, durationMs: number, headers: Record<string, string> = {}): Promise<PacedResult> {
  const byStatus = new Map<number, number>();
  const admittedPerSecond: number[] = [];
  const start = performance.now();
  const total = Math.round((ratePerS * durationMs) / 1000);
  let inFlight = 0;
  const pending: Promise<void>[] = [];
  const count = (status: number): void => {
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
  };
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / ratePerS;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (inFlight >= 64) {
      count(0);
      continue;
    }
    inFlight++;
    const second = Math.floor((performance.now() - start) / 1000);
    pending.push(
      fetch(url, { headers })
        .then(async (res) => {
          await res.arrayBuffer();
          count(res.status);
          if (res.status === 200) admittedPerSecond[second] = (admittedPerSecond[second] ?? 0) + 1;
        })
        .catch(() => count(-1))
        .finally(() => inFlight--),
    );
  }
  await Promise.all(pending);
  return { byStatus, admittedPerSecond: Array.from(admittedPerSecond, (n) => n ?? 0), sent: total };
}

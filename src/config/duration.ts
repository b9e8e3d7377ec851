/**
 * `window:` lengths: an integer and a unit, `500ms`, `30s`, `20m`, `36h`, `2d`, `1w`. No fractions and no compound
 * forms (`1h30m`): a window is one counter's lifetime, and `90m` says the same thing unambiguously.
 */

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

const WINDOW = /^([0-9]+)(ms|s|m|h|d|w)$/;

/** Shortest window: counters and TTLs below a second gain nothing and cost Redis round trips. */
export const MIN_WINDOW_MS = 1000;

export type WindowParse = { ok: true; ms: number } | { ok: false; reason: string };

export function parseWindow(text: string): WindowParse {
  const m = WINDOW.exec(text.trim());
  if (m === null) {
    return { ok: false, reason: `'${text}' is not a window like 500ms, 30s, 20m, 36h, 2d or 1w` };
  }
  const ms = Number(m[1]) * UNIT_MS[m[2]!]!;
  if (!Number.isSafeInteger(ms)) return { ok: false, reason: `'${text}' is too long` };
  if (ms < MIN_WINDOW_MS) return { ok: false, reason: `'${text}' is shorter than the minimum window of 1s` };
  return { ok: true, ms };
}

/** The shortest exact spelling of a window, for /rules (`1200000` → `20m`). */
export function formatWindow(ms: number): string {
  for (const unit of ['w', 'd', 'h', 'm', 's'] as const) {
    const size = UNIT_MS[unit]!;
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/** A duration written like a window (`250ms`, `1s`, `5m`), within [minMs, maxMs]; the reason when not. */
export function parseDuration(text: string, minMs: number, maxMs: number): WindowParse {
  const m = WINDOW.exec(text.trim());
  if (m === null) return { ok: false, reason: `'${text}' is not a duration like 250ms, 30s, 20m or 1h` };
  const ms = Number(m[1]) * UNIT_MS[m[2]!]!;
  if (!Number.isSafeInteger(ms) || ms < minMs || ms > maxMs)
    return { ok: false, reason: `'${text}' is not from ${formatWindow(minMs)} to ${formatWindow(maxMs)}` };
  return { ok: true, ms };
}

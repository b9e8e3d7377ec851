/** Medians and spreads of repeated measurements, and the table the benchmark prints. */

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** "1.23× (1.10–1.31)": the median and the range over the rounds. */
export function ratioText(xs: readonly number[]): string {
  if (xs.length === 0 || xs.some((x) => !Number.isFinite(x))) return 'n/a';
  const lo = Math.min(...xs);
  const hi = Math.max(...xs);
  return xs.length === 1 ? `${median(xs).toFixed(2)}×` : `${median(xs).toFixed(2)}× (${lo.toFixed(2)}–${hi.toFixed(2)})`;
}

export function fmt(n: number, digits = 0): string {
  return Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : 'n/a';
}

export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

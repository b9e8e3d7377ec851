/**
 * Reads a benchmark's printed Markdown table: the row whose first cell is `first`, as numbers (thousands
 * separators dropped; a cell that is not a number, such as 'n/a' or '—', is NaN).
 */
export function tableRow(stdout: string, first: string): number[] | undefined {
  const line = stdout.split('\n').find((l) => l.startsWith(`| ${first} |`));
  return line
    ?.split('|')
    .slice(2, -1)
    .map((c) => (/^-?[\d,]+(\.\d+)?$/.test(c.trim()) ? Number(c.trim().replace(/,/g, '')) : Number.NaN));
}

/** What a benchmark that measured something prints: finite, ordered percentiles below the call's bound. */
export function latencyProblems(where: string, [p50, p99, p999]: readonly number[], boundMs: number): string[] {
  const problems: string[] = [];
  if (![p50, p99, p999].every((x) => x !== undefined && Number.isFinite(x) && x > 0))
    problems.push(`${where}: percentiles ${p50}/${p99}/${p999} not all positive numbers`);
  else if (!(p50! <= p99! && p99! <= p999!)) problems.push(`${where}: p50 ${p50} ≤ p99 ${p99} ≤ p99.9 ${p999} does not hold`);
  else if (p999! > boundMs) problems.push(`${where}: p99.9 ${p999} ms over ${boundMs} ms`);
  return problems;
}

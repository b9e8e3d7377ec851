/**
 * CPU time of a process tree from /proc (Linux): the process and every descendant still alive, so a server
 * started through a shell script (envoyproxy/ratelimit's start.sh) or a redis-server under its guard process
 * is measured whole. Per request it is the figure a noisy shared machine disturbs least.
 */
import { readdirSync, readFileSync } from 'node:fs';

const CLOCK_TICKS = 100;

interface Stat {
  readonly ppid: number;
  readonly seconds: number;
}

function readStat(pid: number): Stat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // after "pid (name) ": state ppid ...; utime and stime are fields 14 and 15 of the full line
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(f[1]), seconds: (Number(f[11]) + Number(f[12])) / CLOCK_TICKS };
  } catch {
    return undefined;
  }
}

/** `pid` and its live descendants (bounded walk); empty when `pid` is gone. */
function tree(pid: number): number[] {
  if (readStat(pid) === undefined) return [];
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    const p = Number(name);
    if (!Number.isInteger(p) || p <= 0) continue;
    const s = readStat(p);
    if (s !== undefined) children.set(s.ppid, [...(children.get(s.ppid) ?? []), p]);
  }
  const out: number[] = [];
  const todo = [pid];
  for (let guard = 0; todo.length > 0 && guard < 10_000; guard++) {
    const p = todo.pop()!;
    out.push(p);
    todo.push(...(children.get(p) ?? []));
  }
  return out;
}

/** User + system CPU seconds of `pid` and its live descendants; NaN when `pid` is unknown or gone. */
export function treeCpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  const pids = tree(pid);
  return pids.length === 0 ? Number.NaN : pids.reduce((a, p) => a + (readStat(p)?.seconds ?? 0), 0);
}

/** Resident set size of `pid` and its descendants in bytes (VmRSS summed), NaN when unknown. */
export function rssBytes(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  let total = Number.NaN;
  for (const p of tree(pid)) {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      if (m) total = (Number.isNaN(total) ? 0 : total) + Number(m[1]) * 1024;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

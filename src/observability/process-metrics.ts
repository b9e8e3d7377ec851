/**
 * The process metrics under the names every Prometheus client library exports them (no prefix), which
 * dashboards written for any service query: process_resident_memory_bytes, process_virtual_memory_bytes,
 * process_heap_bytes, process_cpu_user_seconds_total, process_cpu_system_seconds_total,
 * process_cpu_seconds_total, process_start_time_seconds, process_open_fds, process_max_fds. Read at scrape
 * time only; the `ratelimit_`-prefixed set stays beside them.
 */
import { readFileSync, readdirSync } from 'node:fs';
import type { Registry } from 'prom-client';
import { scrapedCounter, scrapedGauge } from './metrics-scraped.js';

const START_S = Math.round(Date.now() / 1000 - process.uptime());

/** Fields of /proc/self/status in bytes (Linux), e.g. VmRSS; undefined elsewhere. */
function procStatus(): Map<string, number> | undefined {
  try {
    const out = new Map<string, number>();
    for (const line of readFileSync('/proc/self/status', 'utf8').split('\n')) {
      const m = /^(\w+):\s+(\d+) kB$/.exec(line);
      if (m) out.set(m[1]!, Number(m[2]) * 1024);
    }
    return out;
  } catch {
    return undefined;
  }
}

function maxFds(): number | undefined {
  try {
    const m = /Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

export function processMetrics(registers: Registry[]): void {
  const status = { at: 0, fields: undefined as Map<string, number> | undefined };
  // One read of /proc/self/status per scrape serves the three memory gauges.
  const field = (name: string): number | undefined => {
    if (Date.now() - status.at > 100) status.fields = procStatus();
    status.at = Date.now();
    return status.fields?.get(name);
  };
  // A gauge whose source is missing on this platform reads 0 rather than disappearing.
  const gauge = (name: string, help: string, read: () => number | undefined) => scrapedGauge(registers, name, help, () => read() ?? 0);
  gauge('process_resident_memory_bytes', 'Resident memory size in bytes.', () => field('VmRSS') ?? process.memoryUsage.rss());
  gauge('process_virtual_memory_bytes', 'Virtual memory size in bytes.', () => field('VmSize'));
  gauge('process_heap_bytes', 'Process heap size in bytes.', () => field('VmData'));
  gauge('process_start_time_seconds', 'Start time of the process since unix epoch in seconds.', () => START_S);
  gauge('process_open_fds', 'Number of open file descriptors.', () => {
    try {
      return readdirSync('/proc/self/fd').length;
    } catch {
      return undefined;
    }
  });
  const max = maxFds();
  gauge('process_max_fds', 'Maximum number of open file descriptors.', () => max);
  const cpu = (name: string, help: string, pick: (u: NodeJS.CpuUsage) => number) => scrapedCounter(registers, name, help, () => pick(process.cpuUsage()) / 1e6);
  cpu('process_cpu_user_seconds_total', 'Total user CPU time spent in seconds.', (u) => u.user);
  cpu('process_cpu_system_seconds_total', 'Total system CPU time spent in seconds.', (u) => u.system);
  cpu('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds.', (u) => u.user + u.system);
}

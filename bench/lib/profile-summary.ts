/**
 * A V8 .cpuprofile (node --cpu-prof) summarized: active time (idle and the profiler excluded) by part of
 * the program, as µs per request and % of active time, then the functions with the most self time.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** The part a function belongs to, from its name and file. */
export function partOf(fn: string, url: string): string {
  if (fn === '(garbage collector)') return 'garbage collection';
  if (fn === '(program)') return 'V8 / native (program)';
  if (url.includes('/ioredis/') || url.includes('/redis-parser/') || url.includes('/denque/')) return 'ioredis';
  if (url.includes('/prom-client/')) return 'prom-client';
  if (url.includes('/pino') || url.includes('/sonic-boom/')) return 'pino';
  if (url.startsWith('node:internal/http2') || url.startsWith('node:http2')) return 'node:http2';
  if (url.startsWith('node:internal/streams') || url.startsWith('node:internal/stream') || url.startsWith('node:stream')) return 'node streams';
  if (url.startsWith('node:net') || url.startsWith('node:internal/net') || url.includes('stream_base_commons')) return 'node net';
  if (url.startsWith('node:internal/timers') || url.startsWith('node:timers')) return 'node timers';
  if (url.startsWith('node:internal/process/task_queues') || url.startsWith('node:internal/async_hooks')) return 'node promises / ticks';
  if (url.startsWith('node:internal/modules') || url.includes('/tsx/') || url.includes('/esbuild/')) return 'module loading (start-up)';
  if (url.startsWith('node:events') || url.startsWith('node:internal/event_target')) return 'node events';
  if (url.startsWith('node:'))
    return `node other (${
      url
        .slice(5)
        .replace(/^internal\//, '')
        .split('/')[0]
    })`;
  const own = /\/(?:src|dist)\/(.*)$/.exec(url)?.[1];
  if (own !== undefined && !url.includes('/node_modules/')) {
    if (own.startsWith('storage/')) return 'service: storage';
    if (own.startsWith('server/')) return 'service: server';
    if (own.startsWith('core/')) return 'service: engine (core)';
    if (own.startsWith('metrics')) return 'service: metrics';
    return 'service: rest';
  }
  if (url === '' && ['writeUtf8String', 'writeBuffer', 'writev', 'writeLatin1String', 'utf8Write', 'latin1Slice'].includes(fn))
    return 'native socket writes and string codecs';
  if (url === '' && fn === 'runMicrotasks') return 'node promises / ticks';
  if (url === '') return 'native other';
  return 'other JS';
}

export function summarizeProfile(file: string, requests: number, top = 15): string {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + (p.timeDeltas[i] ?? 0));
  const parts = new Map<string, number>();
  const fns = new Map<string, number>();
  let active = 0;
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const { functionName: fn, url, lineNumber } = n.callFrame;
    if (fn === '(idle)' || fn === '(root)') continue;
    active += us;
    const part = partOf(fn, url);
    parts.set(part, (parts.get(part) ?? 0) + us);
    const name = `${fn || '(anonymous)'} ${url.replace(/^.*\/(node_modules|src|dist)\//, '$1/')}:${lineNumber + 1}`;
    fns.set(name, (fns.get(name) ?? 0) + us);
  }
  const line = ([name, us]: [string, number]) => `| ${name} | ${(us / requests).toFixed(1)} | ${((100 * us) / active).toFixed(1)} % |`;
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
  // parts under 0.5 % of active time are folded into one line
  const small = sorted(parts).filter(([, us]) => us < active * 0.005);
  for (const [name] of small) parts.delete(name);
  if (small.length > 0)
    parts.set(
      `${small.length} parts under 0.5 % each`,
      small.reduce((a, [, us]) => a + us, 0),
    );
  return [
    `active CPU in the profile: ${(active / requests).toFixed(1)} µs per request (${requests} requests)`,
    '| part | µs/request | share |',
    '|---|---|---|',
    ...sorted(parts).map(line),
    '',
    '| function (self time) | µs/request | share |',
    '|---|---|---|',
    ...sorted(fns).slice(0, top).map(line),
  ].join('\n');
}

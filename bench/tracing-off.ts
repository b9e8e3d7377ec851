/**
 * What tracing costs when it is off, and when it is on: two builds (`--a`, `--b`, each a dist/cli.js as the image
 * runs it), or one build with TRACING_ENABLED=true as B (`--b-tracing`), started alternately on the memory store.
 * Each round: start-up (exec → first decision, and its CPU), resident memory and CPU at rest, then CPU per
 * request under h2load (from /proc). Prints every round and the medians with the ratio B / A.
 *
 *   npx tsx bench/tracing-off.ts --a /tmp/base/dist/cli.js --b dist/cli.js [--rounds 5] [--requests 20000] [--idle 5 (s)]
 *   npx tsx bench/tracing-off.ts --a dist/cli.js --b dist/cli.js --b-tracing   (tracing on, to a collector that is down)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeRequest } from '../test/support/raw-rls.js';
import { freePort } from '../test/support/redis.js';
import { benchArgs } from './lib/args.js';
import { idleCpuPercent, loadAverage, rssMiB, startAndTime } from './lib/footprint.js';
import { h2load } from './lib/h2load.js';
import { treeCpuSeconds } from './lib/proc-cpu.js';
import { START_ENV, START_NODE_OPTIONS } from './lib/redis-section.js';
import { median } from './lib/stats.js';

const args = benchArgs('bench/tracing-off.ts', { a: 'string', b: 'string', rounds: 'string', requests: 'string', idle: 'string', 'b-tracing': 'flag' });
const builds = { A: args.str('a', 'dist/cli.js'), B: args.str('b', 'dist/cli.js') };
const rounds = args.num('rounds', 5);
const requests = args.num('requests', 20_000);
const idleS = args.num('idle', 5);
const bTracing = args.flag('b-tracing');
const body = encodeRequest('bench', [{ entries: [['user', 'alice']] }, { entries: [['ip', '10.0.0.1']] }]);
const dir = mkdtempSync(join(tmpdir(), 'rl-tracing-off-'));

type Figures = { startupMs: number; startupCpuMs: number; restMiB: number; idlePct: number; usPerReq: number };

async function round(which: 'A' | 'B'): Promise<Figures> {
  const port = await freePort();
  const tracing: Record<string, string> =
    which === 'B' && bTracing ? { TRACING_ENABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await freePort()}` } : {};
  const env = {
    ...process.env,
    ...START_ENV,
    GRPC_HOST: '127.0.0.1',
    GRPC_PORT: String(port),
    HTTP_HOST: '127.0.0.1',
    HTTP_PORT: '0',
    CONFIG_WATCH: 'false',
    LOG_LEVEL: 'error',
    SHUTDOWN_DRAIN_MS: '0',
    CONFIG_DIR: fileURLToPath(new URL('./rules', import.meta.url)),
    ...tracing,
  };
  const s = await startAndTime(process.execPath, [...START_NODE_OPTIONS.split(' '), builds[which], 'serve'], env, port, body);
  try {
    await new Promise((r) => setTimeout(r, 1000));
    const restMiB = rssMiB(s.pid);
    const idlePct = await idleCpuPercent(s.pid, idleS);
    await h2load({ address: `127.0.0.1:${port}`, body, requests: 2000, clients: 10, streams: 10, dir });
    const before = treeCpuSeconds(s.pid);
    const res = await h2load({ address: `127.0.0.1:${port}`, body, requests, clients: 10, streams: 10, dir });
    const usPerReq = ((treeCpuSeconds(s.pid) - before) * 1e6) / Math.max(1, res.ok);
    return { startupMs: s.startupMs, startupCpuMs: s.startupCpuMs, restMiB, idlePct, usPerReq };
  } finally {
    await s.stop();
  }
}

const all: Record<'A' | 'B', Figures[]> = { A: [], B: [] };
const fmt = (f: Figures) =>
  `start ${f.startupMs.toFixed(0)} ms (${f.startupCpuMs.toFixed(0)} ms CPU), rest ${f.restMiB.toFixed(1)} MiB ${f.idlePct.toFixed(2)} % CPU, ${f.usPerReq.toFixed(1)} µs/req`;
try {
  for (let r = 0; r < rounds; r++) {
    for (const k of r % 2 === 0 ? (['A', 'B'] as const) : (['B', 'A'] as const)) all[k].push(await round(k));
    console.log(`round ${r + 1}: A ${fmt(all.A.at(-1)!)} | B ${fmt(all.B.at(-1)!)}`);
  }
  const med = (k: 'A' | 'B', f: keyof Figures) => median(all[k].map((x) => x[f]));
  const line = (f: keyof Figures, unit: string) =>
    `${f}: A ${med('A', f).toFixed(2)} ${unit}, B ${med('B', f).toFixed(2)} ${unit}, B/A ${(med('B', f) / med('A', f)).toFixed(3)}`;
  console.log(
    `# A ${builds.A}, B ${builds.B}${bTracing ? ' (TRACING_ENABLED=true, collector down)' : ''}; ${rounds} rounds, rest ${idleS} s, h2load -c10 -m10 ${requests}; load ${(await loadAverage()).toFixed(1)}`,
  );
  for (const [f, unit] of [
    ['startupMs', 'ms'],
    ['startupCpuMs', 'ms'],
    ['restMiB', 'MiB'],
    ['idlePct', '%'],
    ['usPerReq', 'µs'],
  ] as const)
    console.log(line(f, unit));
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/**
 * A real statsd_exporter (v0.31.0, built by go-tools.ts) on free 127.0.0.1 ports, fed statsd over UDP or TCP,
 * and the Prometheus text of any server read into series keyed `name{a="x",b="y"}` with labels sorted, so two
 * exporters' outputs compare whatever order each writes labels in.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from './eventually.js';
import { goTool } from './go-tools.js';
import { freePort } from './redis.js';

export interface StatsdExporter {
  /** The statsd port (UDP and TCP). */
  readonly port: number;
  readonly webAddress: string;
  sendUdp(lines: readonly string[]): Promise<void>;
  series(): Promise<Series>;
  stop(): Promise<void>;
}

export type Series = Map<string, number>;

/**
 * `mappingFile` as published; `timer_type`, the older name of `observer_type` that v0.31.0 refuses, is renamed
 * (the reference's statsd_exporter library, v0.26.1, reads the one as the other).
 */
export async function startStatsdExporter(mappingFile: string): Promise<StatsdExporter> {
  const dir = mkdtempSync(join(tmpdir(), 'statsd-exporter-'));
  const conf = join(dir, 'conf.yaml');
  writeFileSync(conf, readFileSync(mappingFile, 'utf8').replace(/\btimer_type:/g, 'observer_type:'));
  const [port, web] = [await freePort(), await freePort()];
  const child: ChildProcess = spawn(
    goTool('statsd-exporter'),
    [
      `--statsd.listen-udp=127.0.0.1:${port}`,
      `--statsd.listen-tcp=127.0.0.1:${port}`,
      `--web.listen-address=127.0.0.1:${web}`,
      `--statsd.mapping-config=${conf}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
  const webAddress = `127.0.0.1:${web}`;
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`statsd_exporter exited: ${stderr}`);
      return (await fetch(`http://${webAddress}/metrics`, { signal: AbortSignal.timeout(1000) })).ok;
    },
    { timeoutMs: 15_000, what: 'statsd_exporter to serve /metrics' },
  );
  const udp = createSocket('udp4');
  return {
    port,
    webAddress,
    async sendUdp(lines) {
      for (const line of lines) await new Promise<void>((resolve, reject) => udp.send(line, port, '127.0.0.1', (err) => (err ? reject(err) : resolve())));
    },
    series: async () => parseSeries(await (await fetch(`http://${webAddress}/metrics`, { signal: AbortSignal.timeout(2000) })).text()),
    async stop() {
      udp.close();
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Prometheus text → series with sorted labels; comments skipped. */
export function parseSeries(text: string): Series {
  const out: Series = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = [...(m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((l) => `${l[1]}="${l[2]}"`).sort();
    out.set(labels.length === 0 ? m[1]! : `${m[1]}{${labels.join(',')}}`, Number(m[3]));
  }
  return out;
}

/** The series whose metric name passes `keep`. */
export function only(series: Series, keep: (name: string) => boolean): Series {
  return new Map([...series].filter(([k]) => keep(k.replace(/\{.*$/, ''))));
}

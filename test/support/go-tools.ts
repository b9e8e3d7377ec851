/**
 * Real peers the tests run that come as Go programs from the Go module proxy, each pinned to one version:
 * built once with `go install` into a cache directory named by module and version, then reused. An env var
 * names a binary built elsewhere. `.ci/run` builds them all before the suite
 * (`npx tsx test/support/go-tools.ts --build`).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cachePath } from '../../scripts/cache-dir.mjs';

interface GoTool {
  /** The package to install, without version. */
  readonly pkg: string;
  /**
   * Set when the module's go.mod has replace directives (`go install pkg@version` refuses those): the module is
   * downloaded and `pkg`, relative to it, built inside it with its own go.mod.
   */
  readonly module?: string;
  readonly version: string;
  /** The installed binary's name (the package's last path element). */
  readonly bin: string;
  /** The env var that names a binary built elsewhere. */
  readonly env: string;
}

export const GO_TOOLS = {
  'statsd-exporter': { pkg: 'github.com/prometheus/statsd_exporter', version: 'v0.31.0', bin: 'statsd_exporter', env: 'STATSD_EXPORTER_BIN' },
  jaeger: { module: 'github.com/jaegertracing/jaeger', pkg: './cmd/jaeger', version: 'v1.76.0', bin: 'jaeger', env: 'JAEGER_BIN' },
} as const satisfies Record<string, GoTool>;

export type GoToolName = keyof typeof GO_TOOLS;

const BUILD_TIMEOUT_MS = 900_000;

/** The binary's path, built first when this version has not been built yet. */
export function goTool(name: GoToolName): string {
  const tool: GoTool = GO_TOOLS[name];
  const given = process.env[tool.env];
  if (given) return given;
  const dir = cachePath(`go-${name}-${tool.version}`);
  const bin = join(dir, tool.bin);
  if (existsSync(bin)) return bin;
  const tmp = `${dir}.${process.pid}.tmp`;
  mkdirSync(tmp, { recursive: true });
  const env = { ...process.env, GOBIN: tmp, CGO_ENABLED: '0', GOFLAGS: '-mod=mod' };
  const go = (args: string[], cwd?: string) => {
    const out = spawnSync('go', args, { encoding: 'utf8', timeout: BUILD_TIMEOUT_MS, env, ...(cwd === undefined ? {} : { cwd }) });
    if (out.status !== 0) {
      rmSync(tmp, { recursive: true, force: true });
      throw new Error(`go ${args.join(' ')} failed (${out.error?.message ?? `exit ${out.status}`}):\n${out.stderr}`);
    }
    return out.stdout;
  };
  if (tool.module === undefined) go(['install', `${tool.pkg}@${tool.version}`]);
  else {
    const { Dir } = JSON.parse(go(['mod', 'download', '-json', `${tool.module}@${tool.version}`])) as { Dir: string };
    go(['build', '-o', join(tmp, tool.bin), tool.pkg], Dir);
  }
  if (existsSync(bin))
    rmSync(tmp, { recursive: true, force: true }); // built meanwhile by another process
  else {
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
  }
  return bin;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href && process.argv[2] === '--build') {
  const names = process.argv.length > 3 ? (process.argv.slice(3) as GoToolName[]) : (Object.keys(GO_TOOLS) as GoToolName[]);
  for (const name of names) process.stdout.write(`${name}: ${goTool(name)}\n`);
}

/**
 * Real peers the tests run that come as Go programs from the Go module proxy, each pinned to one version:
 * built once with `go install` into a cache directory named by module and version, then reused. An env var
 * names a binary built elsewhere. `.ci/run` builds them all before the suite
 * (`npx tsx test/support/go-tools.ts --build`).
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cachePath } from '../../scripts/cache-dir.mjs';

interface GoTool {
  /** The package to install, without version. */
  readonly pkg: string;
  readonly version: string;
  /** The installed binary's name (the package's last path element). */
  readonly bin: string;
  /** The env var that names a binary built elsewhere. */
  readonly env: string;
  /**
   * The module `pkg` lies in, when `go install` refuses it (a go.mod with replace directives, as Jaeger's): the
   * module's source is downloaded from the proxy and `pkg` built inside it, as its own main module.
   */
  readonly module?: string;
}

export const GO_TOOLS = {
  'statsd-exporter': { pkg: 'github.com/prometheus/statsd_exporter', version: 'v0.31.0', bin: 'statsd_exporter', env: 'STATSD_EXPORTER_BIN' },
  jaeger: {
    pkg: 'github.com/jaegertracing/jaeger/cmd/jaeger',
    version: 'v1.76.0',
    bin: 'jaeger',
    env: 'JAEGER_BIN',
    module: 'github.com/jaegertracing/jaeger',
  },
} as const satisfies Record<string, GoTool>;

export type GoToolName = keyof typeof GO_TOOLS;

// Jaeger, built as a main module of its own, takes about 25 minutes on two loaded cores.
const BUILD_TIMEOUT_MS = 2_700_000;

const GO_ENV = { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=mod' };

function goInstall(tool: GoTool, tmp: string): SpawnSyncReturns<string> {
  return spawnSync('go', ['install', `${tool.pkg}@${tool.version}`], { encoding: 'utf8', timeout: BUILD_TIMEOUT_MS, env: { ...GO_ENV, GOBIN: tmp } });
}

function buildInModule(tool: GoTool, module: string, tmp: string): SpawnSyncReturns<string> {
  const download = spawnSync('go', ['mod', 'download', '-json', `${module}@${tool.version}`], { encoding: 'utf8', timeout: BUILD_TIMEOUT_MS, env: GO_ENV });
  if (download.status !== 0) return download;
  const src = join(tmp, 'src');
  cpSync((JSON.parse(download.stdout) as { Dir: string }).Dir, src, { recursive: true });
  spawnSync('chmod', ['-R', 'u+w', src]); // the module cache is read-only; the build may tidy go.sum
  const pkg = `.${tool.pkg.slice(module.length)}`;
  const built = spawnSync('go', ['build', '-trimpath', '-o', join(tmp, tool.bin), pkg], { cwd: src, encoding: 'utf8', timeout: BUILD_TIMEOUT_MS, env: GO_ENV });
  rmSync(src, { recursive: true, force: true });
  return built;
}

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
  const out = tool.module === undefined ? goInstall(tool, tmp) : buildInModule(tool, tool.module, tmp);
  if (out.status !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(`building ${tool.pkg}@${tool.version} failed (${out.error?.message ?? `exit ${out.status}`}):\n${out.stderr}`);
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

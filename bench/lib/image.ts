/**
 * How the image runs this service (Dockerfile): `node dist/cli.js serve` with the image's NODE_OPTIONS and
 * MALLOC_ARENA_MAX. Benchmarks measure that, never the checkout's tsx path (bin/ratelimit.mjs on src/), whose
 * loader changes start-up, memory and the code V8 runs.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The V8 options of `npm start`, the image and the Kubernetes example (package.json, Dockerfile, deploy/k8s). */
export const START_NODE_OPTIONS = '--max-semi-space-size=16';
/** The environment the image adds for the allocator (Dockerfile, package.json's start): at most two malloc arenas. */
export const START_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The image's entry point. */
export const IMAGE_CLI = join(ROOT, 'dist/cli.js');

/** The newest modification time under `dir`. */
function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) if (e.isFile()) t = Math.max(t, statSync(join(e.parentPath, e.name)).mtimeMs);
  return t;
}

/** Runs `npm run build` when dist/ is missing or older than src/. */
export function ensureBuilt(): void {
  if (!existsSync(IMAGE_CLI) || newest(join(ROOT, 'src')) > statSync(IMAGE_CLI).mtimeMs) execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'ignore' });
}

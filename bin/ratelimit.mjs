#!/usr/bin/env node
// Entry point of the `ratelimit` command. In a checkout it runs the TypeScript sources through tsx's loader
// (so an old dist/ can never shadow an edit); in the image, which ships only dist/, the compiled JavaScript.
// tsx is a dev dependency: a checkout installed with --omit=dev runs dist/ (after `npm run build`).
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const source = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const compiled = new URL('../dist/cli.js', import.meta.url);
const tsx = existsSync(source) ? await import('tsx/esm/api').catch(() => undefined) : undefined;
if (tsx !== undefined) {
  tsx.register();
  await import(pathToFileURL(source).href);
} else if (existsSync(fileURLToPath(compiled))) {
  await import(compiled.href);
} else {
  process.stderr.write('ratelimit: neither tsx (a dev dependency: run `npm ci`) nor dist/ (run `npm run build`) is available\n');
  process.exit(1);
}

#!/usr/bin/env node
// Entry point of the `ratelimit` command: runs the TypeScript sources through tsx's loader, or the
// compiled dist/ when it exists (npm run build).
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const compiled = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
if (existsSync(compiled)) {
  await import(pathToFileURL(compiled).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli.ts');
}

#!/usr/bin/env node
// Entry point of the `ratelimit` command. In a checkout it runs the TypeScript sources through tsx's loader
// (so an old dist/ can never shadow an edit); in the image, which ships only dist/, the compiled JavaScript.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const source = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(source).href);
} else {
  await import(new URL('../dist/cli.js', import.meta.url).href);
}

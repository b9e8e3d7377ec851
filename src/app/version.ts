/** The package version (package.json sits one level above both src/ and dist/). */
import { readFileSync } from 'node:fs';

export const VERSION: string = (() => {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string }).version ?? 'unknown';
  } catch {
    return 'unknown';
  }
})();

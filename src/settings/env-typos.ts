/**
 * Environment variables that look like one of ours or envoyproxy/ratelimit's but are not (`GRPC_PROT`,
 * `BACKNED`) are otherwise silently ignored: each is named with the closest known name, as the rule checker
 * names a misspelt key. Only near misses count (one edit for short names, two from six letters on), and the
 * variables Kubernetes injects for Services (`X_SERVICE_HOST`, `X_PORT_8080_TCP...`) are left alone.
 */
import { editDistance } from '../config/validate/schema.js';
import type { Notice } from '../compat/translate.js';

const SERVICE_LINK = /_SERVICE_(HOST|PORT)(_|$)|_PORT_\d+_(TCP|UDP|SCTP)/;

export function misspeltEnvNotices(env: Readonly<Record<string, string | undefined>>, known: ReadonlySet<string>): Notice[] {
  const notices: Notice[] = [];
  for (const name of Object.keys(env)) {
    if (known.has(name) || name.length < 4 || SERVICE_LINK.test(name) || !/^[A-Z][A-Z0-9_]*$/.test(name)) continue;
    let best: string | undefined;
    let bestDistance = Infinity;
    for (const candidate of known) {
      if (Math.abs(candidate.length - name.length) > 2) continue;
      const d = editDistance(name, candidate);
      if (d < bestDistance) [best, bestDistance] = [candidate, d];
    }
    if (best === undefined || bestDistance > (name.length < 6 ? 1 : 2)) continue;
    notices.push({ level: 'warn', setting: name, message: `${name} is not a setting and is ignored (did you mean ${best}?)` });
  }
  return notices;
}

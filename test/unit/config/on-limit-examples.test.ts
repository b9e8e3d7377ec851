/**
 * config/examples-on-limit.yaml through the real engine (MemoryStore, fake clock and timer): the responses
 * docs/on-limit.md shows are the ones the service gives, to the byte. Each scenario renders the HTTP answer a
 * client of Envoy receives (status, the sidecar's headers, Envoy's x-envoy-ratelimited, body), and the page
 * must contain it verbatim. PRINT_ON_LIMIT_DOCS=<file> writes the blocks there as JSON (to update the page after a change).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadConfigDir } from '../../../src/config/index.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import { RateLimiter } from '../../../src/core/rate-limiter.js';
import { FakeTimer } from '../../../src/vocab/timer.js';
import type { RateLimitDecision } from '../../../src/vocab/types.js';
import { MemoryStore } from '../../../src/storage/memory/memory-store.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** 2026-11-23 14:00:30 UTC: 30 s into a minute, 14 h into a day. */
const NOW = Date.UTC(2026, 10, 23, 14, 0, 30);
const REASONS: Record<number, string> = { 302: 'Found', 303: 'See Other', 307: 'Temporary Redirect', 429: 'Too Many Requests' };

async function engine() {
  const loaded = await loadConfigDir(`${ROOT}config`, { mergeDomains: false });
  if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
  const clock = new FakeClock(NOW);
  const timer = new FakeTimer(clock);
  const limiter = new RateLimiter({
    store: new MemoryStore({ maxKeys: 1000 }),
    clock,
    timer,
    config: () => loaded.config,
    keyPrefix: 'doc:',
    headers: { mode: 'all', xRateLimit: false },
    nearLimitRatio: 0.8,
  });
  const ask = (key: string, value: string) => limiter.decide({ domain: 'examples', hitsAddend: 0, descriptors: [{ entries: [{ key, value }] }] });
  return { ask, clock, timer };
}

/**
 * What the client of Envoy receives for a rejection: from the ratelimit filter always 429, with Envoy's
 * x-envoy-ratelimited; from ext_authz the decision's httpStatus (content-length and date left out).
 */
function rejected(d: RateLimitDecision, status?: number): string {
  const envoy = status === undefined ? ['x-envoy-ratelimited: true'] : [];
  const lines = [`HTTP/1.1 ${status ?? 429} ${REASONS[status ?? 429]}`, ...d.responseHeadersToAdd.map((h) => `${h.key}: ${h.value}`), ...envoy, ''];
  return `${lines.join('\n')}\n${d.rawBody ? new TextDecoder().decode(d.rawBody) : ''}`;
}

/** What the upstream receives and the client then gets back for an admitted request. */
function admitted(d: RateLimitDecision): string {
  const upstream = d.requestHeadersToAdd.map((h) => `${h.key}: ${h.value}`);
  return [
    ...(upstream.length > 0 ? ['# added to the request the upstream receives', ...upstream] : []),
    '# added to the response the client receives',
    ...d.responseHeadersToAdd.map((h) => `${h.key}: ${h.value}`),
  ].join('\n');
}

async function scenarios(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  {
    const { ask } = await engine();
    for (let i = 0; i < 5; i++) await ask('backoff_client', 'alice');
    const waits: RateLimitDecision[] = [];
    for (let i = 0; i < 4; i++) waits.push(await ask('backoff_client', 'alice'));
    out['backoff (1st rejection)'] = rejected(waits[0]!);
    out['backoff (4th rejection)'] = rejected(waits[3]!);
  }
  {
    const { ask } = await engine();
    for (let i = 0; i < 100; i++) await ask('fixed_client', 'bob');
    out.fixed = rejected(await ask('fixed_client', 'bob'));
  }
  {
    const { ask } = await engine();
    for (let i = 0; i < 1000; i++) await ask('daily_client', 'carol');
    out.daily = rejected(await ask('daily_client', 'carol'));
  }
  {
    const { ask, timer } = await engine();
    for (let i = 0; i < 6; i++) void ask('shaped_client', 'dave');
    await new Promise((resolve) => setImmediate(resolve));
    out['delay (waits)'] = `pending: ${timer.pending}, answered at +${(timer.nextAt() ?? NOW) - NOW} ms first`;
    out['delay (rejected)'] = rejected(await ask('shaped_client', 'dave'));
    timer.advance(1000);
  }
  {
    const { ask } = await engine();
    for (let i = 0; i < 600; i++) await ask('search_client', 'erin');
    out.degrade = admitted(await ask('search_client', 'erin'));
  }
  {
    const { ask } = await engine();
    for (let i = 0; i < 3; i++) await ask('signup_client', 'frank');
    const d = await ask('signup_client', 'frank');
    out['redirect (RLS)'] = rejected(d);
    out['redirect (ext_authz)'] = rejected(d, d.httpStatus);
  }
  return out;
}

describe('config/examples-on-limit.yaml and docs/on-limit.md', () => {
  it('gives the responses the page shows, byte for byte', async () => {
    const blocks = await scenarios();
    if (process.env.PRINT_ON_LIMIT_DOCS !== undefined) writeFileSync(process.env.PRINT_ON_LIMIT_DOCS, JSON.stringify(blocks, null, 2));
    const page = readFileSync(`${ROOT}docs/on-limit.md`, 'utf8');
    expect(blocks['delay (waits)']).toBe('pending: 5, answered at +50 ms first');
    for (const [name, text] of Object.entries(blocks)) {
      if (name === 'delay (waits)') continue;
      // a trailing newline (end of a body, or an empty body) cannot show in the page's code block
      expect(page, name).toContain(text.trimEnd());
    }
  });
});

/**
 * The README's one example: its rules file, through the real engine (MemoryStore, fake clock), gives Bob's
 * 101st request in a minute the 429 the README shows, to the byte (the sidecar's headers and body, and Envoy's
 * x-envoy-ratelimited, as test/unit/config/on-limit-examples.test.ts renders them for docs/on-limit.md).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfigDir } from '../../src/config/index.js';
import { FakeClock } from '../../src/vocab/clock.js';
import { RateLimiter } from '../../src/core/rate-limiter.js';
import { FakeTimer } from '../../src/vocab/timer.js';
import { MemoryStore } from '../../src/storage/memory/memory-store.js';

const README = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8');
/** 30 s into a minute, as the README says. */
const NOW = Date.UTC(2026, 10, 23, 14, 0, 30);

function block(info: string): string {
  const m = new RegExp('```' + info + '\\n([\\s\\S]*?)```').exec(README);
  if (!m) throw new Error(`README has no \`\`\`${info} block`);
  return m[1]!;
}

describe('README example', () => {
  it("gives Bob's 101st request the 429 the README shows", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'readme-example-'));
    try {
      writeFileSync(join(dir, 'rules.yaml'), block('yaml'));
      const loaded = await loadConfigDir(dir, { mergeDomains: false });
      if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
      const clock = new FakeClock(NOW);
      const limiter = new RateLimiter({
        store: new MemoryStore({ maxKeys: 1000 }),
        clock,
        timer: new FakeTimer(clock),
        config: () => loaded.config,
        keyPrefix: 'readme:',
        headers: { mode: 'all', xRateLimit: false },
        nearLimitRatio: 0.8,
      });
      const ask = () => limiter.decide({ domain: 'shop', hitsAddend: 0, descriptors: [{ entries: [{ key: 'user', value: 'bob' }] }] });
      for (let i = 0; i < 100; i++) expect((await ask()).overallCode).toBe('OK');
      const d = await ask();
      expect(d.overallCode).toBe('OVER_LIMIT');
      const body = d.rawBody ? new TextDecoder().decode(d.rawBody) : '';
      const http = ['HTTP/1.1 429 Too Many Requests', ...d.responseHeadersToAdd.map((h) => `${h.key}: ${h.value}`), 'x-envoy-ratelimited: true', '', body].join(
        '\n',
      );
      expect(block('http').trimEnd()).toBe(http.trimEnd());
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

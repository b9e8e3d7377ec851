/**
 * The service with BACKEND=memcached on a real memcached, over gRPC: limits hold; rules memcached cannot run
 * are refused at start and at reload (the rules in force stay), naming the rule; and the failure modes when
 * memcached is stopped (answered at once), paused with SIGSTOP (answered by the caller's deadline) and
 * restarted (used again, its counts from zero), with FAILURE_MODE=open and closed.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { startMemcached, type MemcachedProcess } from '../support/memcached.js';
import { RlsTestClient } from '../support/rls-client.js';
import { startTestService, type TestService } from '../support/service.js';

const run = promisify(execFile);

const RULES = `domain: edge
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 3}
`;
const BUCKET = `domain: edge
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 3, algorithm: token_bucket}
`;

let memcached: MemcachedProcess;
beforeAll(async () => {
  memcached = await startMemcached();
});
afterAll(async () => {
  await memcached?.stop();
});

async function withService(mode: 'open' | 'closed', run: (client: RlsTestClient, service: TestService) => Promise<void>, rules = RULES): Promise<void> {
  const service = await startTestService(
    { 'edge.yaml': rules },
    {
      backend: 'memcached',
      memcacheHostPort: [memcached.address],
      failureMode: mode,
      localCacheSize: 0,
      configWatch: true,
      configDebounceMs: 10,
      // The fake clock keeps the measured deadline margin at its floor (2 ms), less than a loaded test machine
      // needs to send an answer made at the deadline: give the answers of a paused memcached 50 ms.
      deadlineMarginMs: 50,
    },
  );
  const client = new RlsTestClient(service.grpcAddress);
  try {
    await run(client, service);
  } finally {
    client.close();
    await service.close();
  }
}

let serial = 0;
const user = () => `u${process.pid}-${Date.now()}-${++serial}`;

describe('BACKEND=memcached service', () => {
  it('holds a limit and refuses at start the rules memcached cannot run, naming the rule', async () => {
    await withService('closed', async (client) => {
      const u = user();
      const codes = [];
      for (let i = 0; i < 4; i++) codes.push((await client.ask('edge', [[['user', u]]])).overall_code);
      expect(codes).toEqual(['OK', 'OK', 'OK', 'OVER_LIMIT']);
    });
    const error = await withService('open', () => Promise.resolve(), BUCKET).catch((e: unknown) => e as Error & { details?: string[] });
    expect(error).toBeInstanceOf(Error);
    expect(String((error as Error).message)).toContain('cannot run on memcached');
    expect(JSON.stringify(error)).toMatch(
      /edge\.yaml:3: edge\.user: algorithm token_bucket cannot run on memcached \(BACKEND=memcached counts fixed_window limits only; use BACKEND=redis\)/,
    );
  });

  it('ratelimit check with BACKEND=memcached reports what the service would refuse, and exits 1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rl-check-mc-'));
    try {
      writeFileSync(join(dir, 'edge.yaml'), BUCKET);
      const bin = join(import.meta.dirname, '../../bin/ratelimit.mjs');
      const env = { ...process.env, BACKEND: 'memcached', MEMCACHE_HOST_PORT: '127.0.0.1:1' };
      const failed = await run(process.execPath, [bin, 'check', dir], { env }).catch((e: unknown) => e as { code: number; stderr: string });
      expect(failed).toMatchObject({ code: 1 });
      expect((failed as { stderr: string }).stderr).toContain('edge.yaml:3: edge.user: algorithm token_bucket cannot run on memcached');
      writeFileSync(join(dir, 'edge.yaml'), RULES);
      expect((await run(process.execPath, [bin, 'check', dir], { env })).stdout).toContain(': OK');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps the rules in force when a reload brings a rule memcached cannot run', async () => {
    await withService('closed', async (client, service) => {
      writeFileSync(join(service.dir, 'edge.yaml'), BUCKET);
      let status: { ok: boolean; errors: string[] } | undefined;
      await eventually(
        async () => {
          status = ((await (await fetch(`${service.httpBase}/rules`)).json()) as { lastReload: { ok: boolean; errors: string[] } }).lastReload;
          return !status.ok;
        },
        { what: 'the reload to be refused', timeoutMs: 10_000, intervalMs: 20 },
      );
      expect(status!.errors.join('\n')).toMatch(/edge\.yaml:3: edge\.user: algorithm token_bucket cannot run on memcached/);
      const u = user();
      for (let i = 0; i < 3; i++) expect((await client.ask('edge', [[['user', u]]])).overall_code).toBe('OK');
      expect((await client.ask('edge', [[['user', u]]])).overall_code).toBe('OVER_LIMIT');
    });
  });

  it.each(['open', 'closed'] as const)(
    'FAILURE_MODE=%s: stopped, paused and restarted memcached',
    async (mode) => {
      const fallback = mode === 'open' ? 'OK' : 'OVER_LIMIT';
      await withService(mode, async (client) => {
        const u = user();
        expect((await client.ask('edge', [[['user', u]]])).overall_code).toBe('OK');

        await memcached.stop();
        let t = Date.now();
        expect((await client.shouldRateLimit({ domain: 'edge', descriptors: [{ entries: [{ key: 'user', value: u }] }] }, 2000)).overall_code).toBe(fallback);
        expect(Date.now() - t).toBeLessThan(1000); // refused at once, not at the deadline

        await memcached.start();
        await eventually(async () => (await client.ask('edge', [[['user', u]]])).statuses[0]!.limit_remaining === 2, {
          what: 'the restarted (empty) memcached to count again',
          timeoutMs: 5_000,
          intervalMs: 50,
        });
        for (let i = 0; i < 2; i++) expect((await client.ask('edge', [[['user', u]]])).overall_code).toBe('OK');
        expect((await client.ask('edge', [[['user', u]]])).overall_code).toBe('OVER_LIMIT');

        await memcached.pause();
        try {
          t = Date.now();
          const late = await client.shouldRateLimit({ domain: 'edge', descriptors: [{ entries: [{ key: 'user', value: user() }] }] }, 1000);
          expect(late.overall_code).toBe(fallback);
          expect(Date.now() - t).toBeLessThan(1000);
        } finally {
          memcached.resume();
        }
        // awake again: the limit reached before the pause still holds
        await eventually(async () => (await client.ask('edge', [[['user', u]]])).statuses[0]!.code === 'OVER_LIMIT', {
          what: 'the resumed memcached to decide again',
          timeoutMs: 5_000,
          intervalMs: 50,
        });
      });
    },
    30_000,
  );
});

/**
 * QUOTA_MODE=true (every descriptor in quota mode), side by side with envoyproxy/ratelimit started with the same
 * setting, rules and requests: each descriptor's code and the overall code agree. A descriptor over its limit reads
 * OVER_LIMIT; the request is rejected only when every descriptor is over; a descriptor no rule matches counts as
 * within (so a request carrying one is never rejected); an `unlimited` rule stays outside quota mode (a request
 * whose every other descriptor is over is rejected). Each side on
 * its own Redis (the reference has no other store). Needs the reference (shared/tools/envoy-ratelimit, or
 * REFERENCE_START); under CI=true a missing reference fails.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveReference, REFERENCE_START, startReference } from '../../bench/lib/reference.js';
import type { Target } from '../../bench/lib/servers.js';
import { RawRlsClient, type RawDescriptor } from '../support/raw-rls.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';

const missing = haveReference() ? undefined : `no envoyproxy/ratelimit at ${REFERENCE_START} (set REFERENCE_START)`;
if (missing !== undefined && process.env['CI'] === 'true') throw new Error(`CI=true and ${missing}`);

const RULES = `domain: qm
descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: b
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: free
    rate_limit: {unlimited: true}
`;

/** Requests in order; the same on both sides. Each key value is fresh per run (run id), so counts start at 0. */
const STEPS: { what: string; descriptors: (run: string) => RawDescriptor[] }[] = [
  { what: 'a and b within', descriptors: (r) => [{ entries: [['a', r]] }, { entries: [['b', r]] }] },
  { what: 'a over, b within', descriptors: (r) => [{ entries: [['a', r]] }, { entries: [['b', `${r}-2`]] }] },
  { what: 'a over, b over', descriptors: (r) => [{ entries: [['a', r]] }, { entries: [['b', r]] }] },
  { what: 'a over, a descriptor no rule matches', descriptors: (r) => [{ entries: [['a', r]] }, { entries: [['nothing', r]] }] },
  { what: 'a over, an unlimited rule', descriptors: (r) => [{ entries: [['a', r]] }, { entries: [['free', r]] }] },
  { what: 'a over alone', descriptors: (r) => [{ entries: [['a', r]] }] },
];

type Answer = { overall: number; codes: number[] };

async function run(address: string, id: string): Promise<Answer[]> {
  const client = new RawRlsClient(address);
  try {
    const out: Answer[] = [];
    for (const step of STEPS) {
      const r = await client.call('qm', step.descriptors(id), 1);
      out.push({ overall: r.overallCode, codes: r.statuses.map((s) => s.code) });
    }
    return out;
  } finally {
    client.close();
  }
}

describe('QUOTA_MODE=true against envoyproxy/ratelimit', () => {
  let dir = '';
  const redis: RedisServer[] = [];
  let ours: ServiceProcess | undefined;
  let reference: Target | undefined;
  beforeAll(async () => {
    if (missing !== undefined) return;
    dir = mkdtempSync(join(tmpdir(), 'rl-quota-mode-'));
    writeFileSync(join(dir, 'qm.yaml'), RULES);
    redis.push(await startRedis(), await startRedis());
    ours = await spawnService({ CONFIG_DIR: dir, BACKEND: 'redis', REDIS_URL: redis[0]!.url, QUOTA_MODE: 'true' }, 60_000);
    reference = await startReference(dir, `127.0.0.1:${redis[1]!.port}`, REFERENCE_START, { env: ['QUOTA_MODE=true'] });
  }, 90_000);
  afterAll(async () => {
    await ours?.stop();
    await reference?.stop();
    for (const r of redis) await r.stop();
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  it('answers every step as the reference does', async (ctx) => {
    if (missing !== undefined) {
      process.stderr.write(`quota mode: ${missing}, not run\n`);
      ctx.skip();
    }
    const id = `run-${process.pid}`;
    const [theirs, mine] = [await run(reference!.address, id), await run(ours!.grpcAddress, id)];
    const table = (answers: Answer[]) => STEPS.map((s, i) => `${s.what}: ${answers[i]!.overall} [${answers[i]!.codes.join(',')}]`);
    expect(table(mine)).toEqual(table(theirs));
    // and what that is (codes: 1 OK, 2 OVER_LIMIT)
    expect(mine.map((a) => a.overall)).toEqual([1, 1, 2, 1, 2, 2]);
  }, 30_000);
});

/**
 * A lease's units go back into Redis when the lease expires, when the replica is stopped with SIGTERM, and
 * when the rules are reloaded (a reload that changes the limit: the next claim is under the new limit).
 * With BACKEND=memory, `lease` is accepted and ignored with one warning per load. Real processes, real Redis;
 * the shared count is read from Redis itself.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { RlsTestClient } from '../support/rls-client.js';
import { rawCommand, startRedis, type RedisServer } from '../support/redis.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';

const rules = (limit: number) => `domain: life
descriptors:
  - key: user
    value: expiry
    rate_limit: {unit: hour, requests_per_unit: 1000, lease: {size: 50, ttl: 300ms}}
  - key: user
    rate_limit: {unit: hour, requests_per_unit: ${limit}, lease: {size: 5%, ttl: 10m}}
`;

let redis: RedisServer;
let dir: string;
const started: ServiceProcess[] = [];

async function start(env: Record<string, string> = {}): Promise<{ service: ServiceProcess; client: RlsTestClient }> {
  const service = await spawnService({ CONFIG_DIR: dir, BACKEND: 'redis', REDIS_URL: redis.url, ...env });
  started.push(service);
  return { service, client: new RlsTestClient(service.grpcAddress) };
}

/** The fixed_window count Redis holds for user=<value> (layout 2: start and count as two 64-bit integers). */
async function shared(value: string): Promise<number> {
  const keys = [...(await rawCommand(redis.port, ['KEYS', `*${value}*`])).matchAll(/\$\d+\r\n([^\r]*)\r\n/g)].map((m) => m[1]!);
  if (keys.length !== 1) throw new Error(`expected one key for ${value}, got ${keys.length}`);
  const raw = await rawCommand(redis.port, ['BITFIELD', keys[0]!, 'GET', 'i64', '0', 'GET', 'i64', '64']);
  return Number(/:(-?\d+)\r\n$/.exec(raw)?.[1] ?? 0);
}

beforeAll(async () => {
  redis = await startRedis();
  dir = mkdtempSync(join(tmpdir(), 'rl-lease-life-'));
  writeFileSync(join(dir, 'life.yaml'), rules(1000));
}, 30_000);

afterAll(async () => {
  await Promise.all(started.map((s) => s.stop()));
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('lease give-back', () => {
  it('on expiry (ttl), by the replica itself', async () => {
    const { client } = await start();
    expect((await client.ask('life', [[['user', 'expiry']]])).statuses[0]!.limit_remaining).toBe(999);
    expect(await shared('expiry')).toBe(50);
    await eventually(async () => (await shared('expiry')) === 1, { timeoutMs: 5000, what: 'the 49 unused units back' });
    client.close();
  });

  it('on SIGTERM', async () => {
    const { service, client } = await start();
    await client.ask('life', [[['user', 'sigterm']]]);
    expect(await shared('sigterm')).toBe(50);
    client.close();
    await service.stop();
    expect(await shared('sigterm')).toBe(1);
  });

  it('on a reload that changes the limit; the next claim is under the new limit', async () => {
    const { client } = await start({ CONFIG_WATCH: 'true', CONFIG_DEBOUNCE_MS: '50', CONFIG_POLL_INTERVAL_MS: '200' });
    expect((await client.ask('life', [[['user', 'reload']]])).statuses[0]!.limit_remaining).toBe(999);
    expect(await shared('reload')).toBe(50);
    writeFileSync(join(dir, 'life.yaml'), rules(2000));
    await eventually(async () => (await shared('reload')) === 1, { timeoutMs: 10_000, what: 'the give-back after the reload' });
    const after = await client.ask('life', [[['user', 'reload']]]);
    expect(after.statuses[0]!.current_limit?.requests_per_unit).toBe(2000);
    expect(after.statuses[0]!.limit_remaining).toBe(1998); // 1999 left before the new claim of 100, 1 used
    expect(await shared('reload')).toBe(101);
    writeFileSync(join(dir, 'life.yaml'), rules(1000));
    client.close();
  });
});

describe('BACKEND=memory', () => {
  it('accepts `lease` and ignores it, with a warning per load', async () => {
    const service = await spawnService({ CONFIG_DIR: dir, BACKEND: 'memory', CONFIG_WATCH: 'true', CONFIG_DEBOUNCE_MS: '50', CONFIG_POLL_INTERVAL_MS: '200' });
    started.push(service);
    const client = new RlsTestClient(service.grpcAddress);
    const warnings = () =>
      service
        .stderr()
        .split('\n')
        .filter((l) => l.includes('`lease` is ignored with BACKEND=memory')).length;
    expect(warnings()).toBe(1);
    expect((await client.ask('life', [[['user', 'memory']]])).statuses[0]!.limit_remaining).toBe(999);
    writeFileSync(join(dir, 'life.yaml'), rules(3000));
    await eventually(() => warnings() === 2, { timeoutMs: 10_000, what: 'the warning after the reload' });
    client.close();
  });
});

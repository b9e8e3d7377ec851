/**
 * A batch split between a local decision and the store (storage/split-batch.ts), through both stores that
 * split one: the lease store and the capacity-rule store. When the local part rejects, the other checks are only
 * read, and a limit the store could not read says so (`storeFailure`) instead of passing for a limit that
 * rejected on its own. Two real Redis servers: one holds the leased limit, the other the plain limit and is
 * stopped before the read. Time is a fake clock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SidecarShares } from '../../../src/capacity-client/sidecar-shares.js';
import { capacityLimitsOf } from '../../../src/config/compile/capacity-rules.js';
import { compileConfigFiles } from '../../../src/config/index.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import { CapacityRuleStore } from '../../../src/core/capacity-store.js';
import { counterKey } from '../../../src/vocab/keys.js';
import { LeaseManager } from '../../../src/lease/lease-manager.js';
import { LeaseStore } from '../../../src/lease/lease-store.js';
import { RedisLeaseBackend } from '../../../src/lease/redis-backend.js';
import type { LimitCheck } from '../../../src/storage/counter-store.js';
import { createRedisStore, type RedisStore } from '../../../src/storage/redis/redis-store.js';
import { ResilientStore } from '../../../src/storage/resilient.js';
import { startRedis, type RedisServer } from '../../support/redis.js';

const START = 1_700_000_040_000;
const CAPACITY_RULES = `domain: c
descriptors:
  - key: closed
    rate_limit: {unit: second, requests_per_unit: 10, capacity: {resource: off, fallback: pessimistic}}
`;
let servers: RedisServer[] = [];
const stores: RedisStore[] = [];

function check(name: string, extra: Partial<LimitCheck> = {}): LimitCheck {
  return {
    key: counterKey('rl:split:', 'd', [{ key: 'k', value: name }], 'fixed_window', 60_000),
    algorithm: 'fixed_window',
    limit: 10,
    windowMs: 60_000,
    burst: 10,
    hits: 1,
    enforce: true,
    ...extra,
  };
}

async function store(server: RedisServer, clock: FakeClock): Promise<RedisStore> {
  const s = createRedisStore({ url: server.url, clock, connectTimeoutMs: 200, commandTimeoutMs: 200 });
  stores.push(s);
  await s.waitUntilReady(5000);
  return s;
}

beforeAll(async () => {
  servers = await Promise.all([startRedis(), startRedis()]);
}, 60_000);

afterAll(async () => {
  await Promise.all(stores.map((s) => s.close().catch(() => undefined)));
  await Promise.all(servers.map((s) => s.stop()));
});

describe('a batch whose local part rejects', () => {
  it('lease store: the plain limit the store could not read is reported as a store failure', async () => {
    const [leased, plain] = servers as [RedisServer, RedisServer];
    const clock = new FakeClock(START);
    const manager = new LeaseManager({ backend: new RedisLeaseBackend(await store(leased, clock)), clock });
    const inner = new ResilientStore(await store(plain, clock), { mode: 'closed', expectedReplicas: 1, clock });
    const leaseStore = new LeaseStore(inner, manager, { clock, sweepIntervalMs: 0 });
    const l = check('leased', { limit: 4, burst: 4, lease: { size: 2, ttlMs: 60_000 } });
    const p = check('plain', { limit: 1000, burst: 1000 });
    // Spend the leased limit; then its spent lease rejects locally, without asking Redis.
    const admitted: boolean[] = [];
    for (let i = 0; i < 6; i++) admitted.push((await leaseStore.apply([l, p], clock.nowMs()))[0]!.allowed);
    expect(admitted).toEqual([true, true, true, true, false, false]);
    await plain.stopRedis();
    try {
      const [fromLease, fromStore] = await leaseStore.apply([l, p], clock.nowMs(), { deadlineMs: clock.nowMs() + 300 });
      expect(fromLease!.allowed).toBe(false);
      expect(fromLease!.storeFailure).toBeUndefined();
      expect(fromStore).toMatchObject({ allowed: false, storeFailure: true });
    } finally {
      await plain.restart();
    }
  });

  it('capacity-rule store: the same outcome for the same split', async () => {
    const plain = servers[1]!;
    const clock = new FakeClock(START);
    const inner = new ResilientStore(await store(plain, clock), { mode: 'closed', expectedReplicas: 1, clock });
    // No capacity server and a pessimistic fallback: the resource's share is 0, so the capacity check rejects locally.
    const rules = compileConfigFiles([{ name: 'c.yaml', text: CAPACITY_RULES }], { mergeDomains: false });
    if (!rules.ok) throw new Error(rules.errors.join('\n'));
    const shares = new SidecarShares({ servers: [] });
    shares.sync(capacityLimitsOf(rules.config));
    const capacityStore = new CapacityRuleStore(inner, shares, clock);
    const c = check('capacity', { capacity: { resource: 'off' } });
    const p = check('plain-2');
    await plain.stopRedis();
    try {
      const [local, fromStore] = await capacityStore.apply([c, p], clock.nowMs(), { deadlineMs: clock.nowMs() + 300 });
      expect(local!.allowed).toBe(false);
      expect(fromStore).toMatchObject({ allowed: false, storeFailure: true });
    } finally {
      await plain.restart();
    }
  });
});

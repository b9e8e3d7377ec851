import { defineConfig } from 'vitest/config';

/**
 * Tests that assert answers within tight deadlines (tens of ms) or drive several service processes with hundreds
 * of concurrent clients. They run after everything else (vitest `sequence.groupOrder`), one file at a time, so
 * they neither starve each other nor the rest of the suite on a small shared machine; the rest runs two files at
 * once (most of its time is spent waiting on sockets, Redis and child processes).
 */
export const TIMING_TESTS = [
  'test/e2e/deadlines.test.ts',
  'test/integration/storage/resilient.test.ts',
  'test/e2e/traffic.test.ts',
  'test/e2e/lease-replicas.test.ts',
  'test/e2e/redis-replicas.test.ts',
  'test/e2e/throttling-replicas.test.ts',
  'test/envoy/ops-restart.test.ts',
  'test/e2e/capacity-client-sidecars.test.ts',
  'test/e2e/on-limit-deadline.test.ts',
  'test/envoy/rlqs.test.ts',
  'test/envoy/failopen-audit.test.ts',
  'test/envoy/rlqs-replicas.test.ts',
  'test/envoy/rapid-reset.test.ts',
  'test/e2e/xds-hostile.test.ts',
];

const common = {
  testTimeout: 30_000,
  hookTimeout: 60_000,
  // Integration tests start their own redis-server and gRPC servers on free ports; files run in parallel workers.
  pool: 'forks' as const,
};

export default defineConfig({
  test: {
    reporters: ['default'],
    maxWorkers: 2,
    projects: [
      { test: { ...common, name: 'default', include: ['test/**/*.test.ts'], exclude: TIMING_TESTS } },
      { test: { ...common, name: 'timing', include: TIMING_TESTS, fileParallelism: false, sequence: { groupOrder: 1 } } },
    ],
  },
});

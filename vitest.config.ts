import { defineConfig } from 'vitest/config';

/**
 * The tests of the gRPC port's behaviour (framing, deadlines, statuses, limits, TLS, sockets, health,
 * shutdown) run once per transport (GRPC_TRANSPORT, src/server/transport.ts): the `default` project runs
 * everything on the default transport (lean), the `grpc-js` project runs these files again on grpc-js.
 * test/support/service.ts and service-process.ts pass GRPC_TRANSPORT on to the service under test.
 */
export const TRANSPORT_TESTS = [
  'test/e2e/rls.test.ts',
  'test/e2e/request-limits.test.ts',
  'test/e2e/robustness.test.ts',
  'test/e2e/fuzz.test.ts',
  'test/e2e/deadlines.test.ts',
  'test/e2e/grpc-tls.test.ts',
  'test/e2e/grpc-unix-socket.test.ts',
  'test/e2e/shutdown.test.ts',
  'test/e2e/redis-health.test.ts',
  'test/e2e/ext-authz-answers.test.ts',
  'test/e2e/ext-authz-malformed.test.ts',
  'test/e2e/grpc-timeout.test.ts',
  'test/e2e/grpc-guard.test.ts',
  'test/envoy/ops-transport.test.ts',
  'test/envoy/rapid-reset.test.ts',
  'test/envoy/ops-drain.test.ts',
  'test/e2e/capacity-doorman.test.ts',
  'test/e2e/capacity-bounds.test.ts',
  'test/e2e/on-limit-cancel.test.ts',
  'test/e2e/rlqs-stream.test.ts',
  'test/e2e/rlqs-replicas.test.ts',
];

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
      // The fuzz sends its full 100,000 requests on the default transport; a quarter checks grpc-js.
      { test: { ...common, name: 'grpc-js', include: TRANSPORT_TESTS, exclude: TIMING_TESTS, env: { GRPC_TRANSPORT: 'grpc-js', FUZZ_REQUESTS: '25000' } } },
      { test: { ...common, name: 'timing', include: TIMING_TESTS, fileParallelism: false, sequence: { groupOrder: 1 } } },
      {
        test: {
          ...common,
          name: 'timing-grpc-js',
          include: TIMING_TESTS.filter((f) => TRANSPORT_TESTS.includes(f)),
          env: { GRPC_TRANSPORT: 'grpc-js' },
          fileParallelism: false,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});

import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration tests start their own redis-server and gRPC servers on free ports; files run in parallel workers.
    pool: 'forks',
    reporters: ['default'],
  },
});

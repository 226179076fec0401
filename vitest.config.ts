import { defineConfig } from 'vitest/config';

// Two cores: run test files in parallel, but not greedily. Each file gets its own Postgres schema,
// so files never share state.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 3,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});

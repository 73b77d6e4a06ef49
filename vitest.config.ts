import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // Tests import the package by its public subpaths (cairn/agent ...) and get the TypeScript sources.
    conditions: ['source'],
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    pool: 'forks',
  },
});

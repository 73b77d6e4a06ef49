import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = fileURLToPath(new URL('./src/', import.meta.url));

export default defineConfig({
  resolve: {
    // Tests import the package by its public subpaths (cairn/agent, ...) and get the TypeScript sources.
    alias: [
      { find: /^cairn$/, replacement: `${src}index.ts` },
      { find: /^cairn\/(openai|anthropic|google|openai-compatible)$/, replacement: `${src}providers/$1/index.ts` },
      { find: /^cairn\/stores$/, replacement: `${src}stores/backend-kit.ts` },
      { find: /^cairn\/([a-z/-]+)$/, replacement: `${src}$1/index.ts` },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    pool: 'forks',
    // Two test files at a time. Vitest's default is one fewer than the cores, which on a two-core machine ran the
    // suite file by file (about 885 s of tests in 1,056 s); most files wait on child processes, sockets and fsync.
    maxWorkers: 2,
  },
});

import {defineConfig} from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    // the CLI tests spawn ./bin/run.js: build dist/ first when it is missing or stale
    globalSetup: ['test/global-setup.ts'],
    // forks: better-sqlite3 and the drivers' sockets are happiest in their own process
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // the servers are shared by every file; each file uses its own tables
    fileParallelism: true,
    maxWorkers: 2,
  },
})

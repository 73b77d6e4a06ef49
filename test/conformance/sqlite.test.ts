/**
 * The conformance suites against cairn/ops/sqlite: each case gets a new file
 * in its own temporary directory; every open() after the first is another
 * process on that file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createManualClock, defineStoreConformance } from 'cairn/testing';

defineStoreConformance({
  name: 'sqlite',
  features: { leases: true, breakers: true, journal: true },
  async create() {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-sqlite-conformance-'));
    const clock = createManualClock();
    return {
      // 'normal': the suite saves a thousand runs; durability across power loss is not what it checks.
      open: () => createSqliteOpsStore({ path: join(dir, 'ops.sqlite'), clock, synchronous: 'normal' }),
      advance: async (ms) => clock.advance(ms),
      destroy: () => rmSync(dir, { recursive: true, force: true }),
    };
  },
}, { describe, it });

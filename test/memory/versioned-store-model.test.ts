/**
 * The SQLite versioned memory store answers every random sequence of
 * commits and forgets as the in-memory store does (versioned-store-model.ts).
 * fast-check prints its seed; FC_SEED replays it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, it } from 'vitest';
import { createSqliteOpsStore, type SqliteOpsStore } from 'cairn/ops/sqlite';
import { createSqliteVersionedMemoryStore } from 'cairn/memory/versioned/sqlite';
import type { VersionedMemoryStore } from 'cairn/memory/versioned';
import { checkAgainstInMemory } from './versioned-store-model.js';

const dir = mkdtempSync(join(tmpdir(), 'cairn-vmem-model-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the SQLite versioned memory store against the in-memory one', () => {
  it('gives the same answers and leaves the same state for random commits and forgets', async () => {
    let n = 0;
    const ops = new Map<VersionedMemoryStore, SqliteOpsStore>();
    await checkAgainstInMemory('versioned memory store model (sqlite)', 150, async () => {
      const opsStore = createSqliteOpsStore({ path: join(dir, `m-${n++}.sqlite`) });
      const store = createSqliteVersionedMemoryStore(opsStore, { checkpointAfterForget: false });
      ops.set(store, opsStore);
      return store;
    }, async (store) => {
      ops.get(store)?.close();
    });
  }, 180_000);
});

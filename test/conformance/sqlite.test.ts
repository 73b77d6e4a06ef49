/**
 * The conformance suites against cairn/ops/sqlite: each case gets a new file
 * in its own temporary directory, and `reopen` opens another store on that
 * file, as a second process would.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { createSqliteOpsStore, type SqliteOpsStore } from 'cairn/ops/sqlite';
import {
  createManualClock, validateAgentRunStore, validateLeaseProvider,
  type AgentRunStoreFixture, type LeaseProviderFixture,
} from 'cairn/testing';

/** What each fixture opened, so destroy can close it and remove the directory. */
const opened = new WeakMap<object, { dir: string; stores: SqliteOpsStore[] }>();

function openFile() {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-sqlite-conformance-'));
  const clock = createManualClock();
  const stores: SqliteOpsStore[] = [];
  const open = () => {
    // 'normal': the suite saves a thousand runs; durability across power loss is not what it checks.
    const ops = createSqliteOpsStore({ path: join(dir, 'ops.sqlite'), clock, synchronous: 'normal' });
    stores.push(ops);
    return ops;
  };
  return { dir, clock, stores, open };
}

function destroy(fixture: object) {
  const state = opened.get(fixture);
  if (!state) return;
  for (const ops of state.stores) ops.close();
  rmSync(state.dir, { recursive: true, force: true });
}

validateAgentRunStore({
  name: 'sqlite',
  features: { list: true, prune: true, leases: true },
  async create() {
    const { dir, clock, stores, open } = openFile();
    const ops = open();
    const fixture: AgentRunStoreFixture = {
      store: ops.agentRuns,
      leases: ops.leases,
      reopen: async () => open().agentRuns,
      advance: async (ms) => clock.advance(ms),
    };
    opened.set(fixture, { dir, stores });
    return fixture;
  },
  async destroy(fixture) {
    destroy(fixture);
  },
}, { describe, it });

validateLeaseProvider({
  name: 'sqlite',
  async create() {
    const { dir, clock, stores, open } = openFile();
    const fixture: LeaseProviderFixture = {
      provider: open().leases,
      reopen: async () => open().leases,
      advance: async (ms) => clock.advance(ms),
    };
    opened.set(fixture, { dir, stores });
    return fixture;
  },
  async destroy(fixture) {
    destroy(fixture);
  },
}, { describe, it });

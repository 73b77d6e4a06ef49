/**
 * `createInMemoryVersionedMemoryStore`: the versioned memory store for tests,
 * demos and single-process apps. Nothing survives the process. A commit is
 * decided in full before anything changes (checks.ts), then applied in one
 * synchronous step, so it lands whole or not at all.
 */
import { InvalidOptionsError } from '../../errors/index.js';
import {
  checkCommit, checkForget, checkIdRead, checkList, checkReceiptRead, checkScopeOf, checkSearch, copyReceipt, copyRecord,
  forgetRevisions, planCommit, rankVersioned, replayOf,
} from './checks.js';
import type { VersionedMemoryReceipt, VersionedMemoryRecord, VersionedMemoryStore } from './types.js';

export interface InMemoryVersionedMemoryStoreOptions {
  /**
   * Not read by the store itself (every write's time is the caller's `at`);
   * kept so a session built on this store and the store agree on one clock.
   * @default Date.now
   */
  clock?: { now(): number };
}

interface ScopeState {
  revision: number;
  /** Every revision of each record, oldest first; the map keeps records in the order they were added. */
  records: Map<string, VersionedMemoryRecord[]>;
  receipts: Map<string, VersionedMemoryReceipt>;
  /** The forget rows, in the order they were written, one per record revision. */
  forgotten: { recordId: string; revision: number; forgottenAt: number }[];
}

/**
 * A versioned memory store in this process's memory. Every call checks what
 * it takes and returns copies.
 *
 * @example
 * ```ts
 * const store = createInMemoryVersionedMemoryStore();
 * const { receipt } = await store.commit({
 *   scope: { userId: 'ada' }, operationId: 'op-1', requestDigest: `sha256:${'0'.repeat(64)}`, at: Date.now(),
 *   mutations: [{ op: 'add', id: 'tea', text: 'Ada prefers tea.', origin: 'explicit' }],
 * });
 * ```
 */
export function createInMemoryVersionedMemoryStore(options: InMemoryVersionedMemoryStoreOptions = {}): VersionedMemoryStore {
  if (options === null || typeof options !== 'object') throw new InvalidOptionsError('createInMemoryVersionedMemoryStore: options must be an object.');
  if (options.clock !== undefined && typeof options.clock?.now !== 'function') {
    throw new InvalidOptionsError('createInMemoryVersionedMemoryStore: clock must have a now() method.');
  }
  const scopes = new Map<string, ScopeState>();
  const stateOf = (key: string): ScopeState | undefined => scopes.get(key);
  const ensure = (key: string): ScopeState => {
    let state = scopes.get(key);
    if (!state) scopes.set(key, state = { revision: 0, records: new Map(), receipts: new Map(), forgotten: [] });
    return state;
  };
  const latestOf = (state: ScopeState | undefined) => [...(state?.records.values() ?? [])].map((revisions) => revisions[revisions.length - 1]!);

  return {
    async commit(input) {
      const commit = checkCommit(input);
      const state = ensure(commit.key);
      const stored = state.receipts.get(commit.operationId);
      if (stored) return replayOf(stored, commit);
      const latest = new Map<string, VersionedMemoryRecord>();
      for (const m of commit.mutations) {
        const revisions = state.records.get(m.id);
        if (revisions) latest.set(m.id, revisions[revisions.length - 1]!);
      }
      const plan = planCommit(commit, state.revision, latest);
      // Decided in full: from here on nothing throws.
      for (const write of plan.writes) {
        const revisions = state.records.get(write.record.id);
        if (revisions) revisions.push(write.record);
        else state.records.set(write.record.id, [write.record]);
      }
      state.revision = plan.scopeRevision;
      state.receipts.set(commit.operationId, plan.receipt);
      return { receipt: copyReceipt(plan.receipt), replayed: false };
    },

    async receipt(input) {
      const read = checkReceiptRead(input);
      const stored = stateOf(read.key)?.receipts.get(read.operationId);
      return stored ? copyReceipt(stored) : undefined;
    },

    async get(input) {
      const read = checkIdRead(input, 'get');
      const revisions = stateOf(read.key)?.records.get(read.id);
      return revisions ? copyRecord(revisions[revisions.length - 1]!) : undefined;
    },

    async history(input) {
      const read = checkIdRead(input, 'history');
      return (stateOf(read.key)?.records.get(read.id) ?? []).map(copyRecord);
    },

    async list(input) {
      const read = checkList(input);
      const shown = latestOf(stateOf(read.key)).filter((r) => r.status === 'active'
        || (r.status === 'retracted' && read.includeRetracted) || (r.status === 'forgotten' && read.includeForgotten));
      return shown.slice(0, read.limit).map(copyRecord);
    },

    async search(input) {
      const read = checkSearch(input);
      return rankVersioned(latestOf(stateOf(read.key)), read.text, read.limit);
    },

    async scopeRevision(input) {
      const { key } = checkScopeOf(input, 'scopeRevision');
      return stateOf(key)?.revision ?? 0;
    },

    async forget(input) {
      const forget = checkForget(input);
      const state = stateOf(forget.key);
      const revisions = state?.records.get(forget.id) ?? [];
      const taken = forgetRevisions(forget, revisions.map((r) => r.revision));
      for (const record of revisions) {
        if (!taken.includes(record.revision)) continue;
        record.text = null;
        record.status = 'forgotten';
        if (!state!.forgotten.some((f) => f.recordId === forget.id && f.revision === record.revision)) {
          state!.forgotten.push({ recordId: forget.id, revision: record.revision, forgottenAt: forget.at });
        }
      }
      return { scope: { ...forget.scope }, records: taken.map((revision) => ({ recordId: forget.id, revision })), forgottenAt: forget.at };
    },

    async forgotten(input) {
      const { key } = checkScopeOf(input, 'forgotten');
      return (stateOf(key)?.forgotten ?? []).map((f) => ({ ...f }));
    },
  };
}

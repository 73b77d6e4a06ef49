/** `createInMemoryMemoryStore`: the MemoryStore for tests, demos and single-process apps. */
import {
  byCreation, checkAdd, checkIdInput, checkList, checkSearch, checkSweep, checkUpdate, copyRecord, decideAdd, decideUpdate, operationIdOf,
} from './records.js';
import { memoryScopeKey, memoryScopeMatches } from './scope.js';
import { rankMemories } from './search.js';
import type { MemoryRecord, MemoryStore } from './types.js';

/**
 * A memory store in this process's memory: nothing survives the process.
 * Every call copies what it takes and what it returns.
 *
 * @example
 * ```ts
 * const store = createInMemoryMemoryStore();
 * await store.add({ id: 'm-1', scope: { userId: 'ada' }, text: 'prefers tea', at: Date.now() });
 * const { hits } = await store.search({ scope: { userId: 'ada' }, query: 'tea' });
 * ```
 */
export function createInMemoryMemoryStore(): MemoryStore {
  const byId = new Map<string, MemoryRecord>();
  /** scope key + hash -> id: the dedup index. */
  const byHash = new Map<string, string>();
  const hashKey = (record: Pick<MemoryRecord, 'scope' | 'hash'>) => `${memoryScopeKey(record.scope)}\u0000${record.hash}`;

  const put = (record: MemoryRecord) => {
    const previous = byId.get(record.id);
    if (previous) byHash.delete(hashKey(previous));
    byId.set(record.id, record);
    byHash.set(hashKey(record), record.id);
  };
  const remove = (id: string) => {
    const previous = byId.get(id);
    if (!previous) return false;
    byHash.delete(hashKey(previous));
    byId.delete(id);
    return true;
  };
  const inScope = (query: MemoryRecord['scope']) => [...byId.values()].filter((r) => memoryScopeMatches(query, r.scope));

  return {
    async add(input) {
      const { record } = checkAdd(input);
      const existingId = byHash.get(hashKey(record));
      const decision = decideAdd(record, existingId === undefined ? undefined : byId.get(existingId), byId.get(record.id));
      put(copyRecord(decision.record));
      return { record: copyRecord(decision.record), deduplicated: decision.kind === 'refresh' };
    },
    async update(input) {
      const update = checkUpdate(input);
      const target = byId.get(update.id);
      if (!target || !memoryScopeMatches(update.scope, target.scope)) return undefined;
      const otherId = byHash.get(hashKey({ scope: target.scope, hash: update.hash }));
      const decision = decideUpdate(update, target, otherId === undefined ? undefined : byId.get(otherId));
      if (decision.kind === 'fold') remove(decision.deleteId);
      put(copyRecord(decision.record));
      return { record: copyRecord(decision.record), deduplicated: decision.kind === 'fold' };
    },
    async delete(input) {
      const { id, scope } = checkIdInput(input, 'delete');
      const record = byId.get(id);
      if (!record || !memoryScopeMatches(scope, record.scope)) return false;
      return remove(id);
    },
    async get(input) {
      const { id, scope } = checkIdInput(input, 'get');
      const record = byId.get(id);
      return record && memoryScopeMatches(scope, record.scope) ? copyRecord(record) : undefined;
    },
    async list(input) {
      const { scope, operationId, limit } = checkList(input);
      const found = inScope(scope).filter((r) => operationId === undefined || operationIdOf(r) === operationId).sort(byCreation);
      return (limit === undefined ? found : found.slice(0, limit)).map(copyRecord);
    },
    async search(input) {
      const search = checkSearch(input);
      const result = rankMemories(inScope(search.scope), search);
      return { ...result, hits: result.hits.map((hit) => ({ ...hit, record: copyRecord(hit.record) })) };
    },
    async sweep(input) {
      const { scope, now } = checkSweep(input);
      let removed = 0;
      for (const record of inScope(scope)) {
        if (record.expiresAt !== undefined && record.expiresAt <= now && remove(record.id)) removed++;
      }
      return removed;
    },
  };
}

/**
 * The memory store in the SQLite ops file (`cairn_memories`, created by the
 * ops store's migrations): the same file and connection as the runs, reached
 * as `ops.memories`. Each write is one IMMEDIATE transaction, so processes
 * sharing the file never write the same text twice into one scope.
 */
import type Database from 'better-sqlite3';
import { CairnError, CairnTypeError, PersistenceError } from '../errors/index.js';
import {
  checkAdd, checkIdInput, checkList, checkSearch, checkSweep, checkUpdate, decideAdd, decideUpdate,
} from './records.js';
import { fromRow, MEMORY_COLUMNS, rowValues, scopeWhere, type MemoryRow } from './rows.js';
import { memoryScopeKey, memoryScopeMatches } from './scope.js';
import { rankMemories } from './search.js';
import type { MemoryRecord, MemoryScope, MemoryStore } from './types.js';

const INSERT = `INSERT INTO cairn_memories (${MEMORY_COLUMNS.join(', ')}) VALUES (${MEMORY_COLUMNS.map(() => '?').join(', ')})`;
const REPLACE = `UPDATE cairn_memories SET ${MEMORY_COLUMNS.slice(1).map((c) => `${c} = ?`).join(', ')} WHERE id = ?`;

export interface SqliteMemoryOptions {
  /** A read-only connection: records are read, writes are refused. */
  readonly: boolean;
  /** The file has no memory table (a read-only store older than its migration): every scope is empty. */
  missing: boolean;
}

/** @internal Takes a better-sqlite3 handle, whose types stay out of the published declarations (a user need not install @types/better-sqlite3). */
export function createSqliteMemoryStore(db: Database.Database, options: SqliteMemoryOptions): MemoryStore {
  let prepared: ReturnType<typeof prepare> | undefined;
  // Prepared at the first call, so that opening the ops store costs nothing for a run without memory.
  const statements = () => (prepared ??= prepare(db));
  const refuseWrite = (what: string) => {
    if (options.readonly) throw new CairnTypeError('invalid_options', `The ops store was opened read-only: it cannot ${what} a memory.`);
  };
  const select = (scope: MemoryScope, extra = '', values: unknown[] = []): MemoryRecord[] => {
    if (options.missing) return [];
    const where = scopeWhere(scope, () => '?');
    const sql = `SELECT * FROM cairn_memories WHERE ${where.sql}${extra} ORDER BY created_at, id`;
    return (db.prepare(sql).all(...where.values, ...values) as MemoryRow[]).map(fromRow);
  };

  return guarded({
    async add(input) {
      const { record } = checkAdd(input);
      refuseWrite('add');
      const s = statements();
      return s.immediate(() => {
        const byHash = s.byHash.get(memoryScopeKey(record.scope), record.hash) as MemoryRow | undefined;
        const byId = s.byId.get(record.id) as MemoryRow | undefined;
        const decision = decideAdd(record, byHash && fromRow(byHash), byId && fromRow(byId));
        if (decision.kind === 'insert') s.insert.run(...rowValues(decision.record));
        else s.replace.run(...rowValues(decision.record).slice(1), decision.record.id);
        return { record: decision.record, deduplicated: decision.kind === 'refresh' };
      });
    },
    async update(input) {
      const update = checkUpdate(input);
      refuseWrite('update');
      const s = statements();
      return s.immediate(() => {
        const row = s.byId.get(update.id) as MemoryRow | undefined;
        const target = row && fromRow(row);
        if (!target || !memoryScopeMatches(update.scope, target.scope)) return undefined;
        const other = s.byHash.get(memoryScopeKey(target.scope), update.hash) as MemoryRow | undefined;
        const decision = decideUpdate(update, target, other && fromRow(other));
        if (decision.kind === 'fold') s.remove.run(decision.deleteId);
        s.replace.run(...rowValues(decision.record).slice(1), decision.record.id);
        return { record: decision.record, deduplicated: decision.kind === 'fold' };
      });
    },
    async delete(input) {
      const { id, scope } = checkIdInput(input, 'delete');
      refuseWrite('delete');
      const where = scopeWhere(scope, () => '?');
      return db.prepare(`DELETE FROM cairn_memories WHERE id = ? AND ${where.sql}`).run(id, ...where.values).changes > 0;
    },
    async get(input) {
      const { id, scope } = checkIdInput(input, 'get');
      return select(scope, ' AND id = ?', [id])[0];
    },
    async list(input) {
      const { scope, operationId, limit } = checkList(input);
      const found = operationId === undefined ? select(scope) : select(scope, ' AND operation_id = ?', [operationId]);
      return limit === undefined ? found : found.slice(0, limit);
    },
    async search(input) {
      const search = checkSearch(input);
      return rankMemories(select(search.scope), search);
    },
    async sweep(input) {
      const { scope, now } = checkSweep(input);
      refuseWrite('sweep');
      const where = scopeWhere(scope, () => '?');
      return db.prepare(`DELETE FROM cairn_memories WHERE ${where.sql} AND expires_at IS NOT NULL AND expires_at <= ?`).run(...where.values, now).changes;
    },
  });
}

function prepare(db: Database.Database) {
  return {
    byId: db.prepare('SELECT * FROM cairn_memories WHERE id = ?'),
    byHash: db.prepare('SELECT * FROM cairn_memories WHERE scope_key = ? AND hash = ?'),
    insert: db.prepare(INSERT),
    replace: db.prepare(REPLACE),
    remove: db.prepare('DELETE FROM cairn_memories WHERE id = ?'),
    immediate<T>(body: () => T): T {
      return db.transaction(body).immediate();
    },
  };
}

/**
 * Every call with the driver's failures (a closed connection, a full disk, a
 * busy file past its timeout) turned into a PersistenceError that keeps the
 * driver's error as its cause; Cairn's own errors pass as they are.
 */
function guarded<T extends object>(store: T): T {
  const wrapped = {} as Record<string, unknown>;
  for (const [name, call] of Object.entries(store) as [string, (...args: unknown[]) => Promise<unknown>][]) {
    wrapped[name] = async (...args: unknown[]) => {
      try {
        return await call(...args);
      } catch (error) {
        if (CairnError.isInstance(error)) throw error;
        throw new PersistenceError(`The SQLite memory store's ${name} failed: ${error instanceof Error ? error.message : String(error)}`, error);
      }
    };
  }
  return wrapped as T;
}

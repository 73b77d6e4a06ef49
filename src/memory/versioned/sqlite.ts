/**
 * `createSqliteVersionedMemoryStore`: versioned memory in the file of a
 * SQLite ops store, in tables of its own (sqlite-schema.ts), on the ops
 * store's connection. A commit or a forget is one IMMEDIATE transaction. The
 * connection runs with `secure_delete` on, and a forget is followed by a WAL
 * checkpoint that truncates the WAL, so a forgotten text is left neither in
 * the file's pages (free ones included) nor in the WAL.
 */
import type Database from 'better-sqlite3';
import { InvalidOptionsError } from '../../errors/index.js';
import { connectionOf, type SqliteOpsStore } from '../../stores/sqlite/index.js';
import {
  checkCommit, checkForget, checkIdRead, checkList, checkReceiptRead, checkScopeOf, checkSearch, copyReceipt,
  forgetRevisions, planCommit, rankVersioned, recordOfRow, replayOf, storeFailure, VersionedMemorySchemaError, type RevisionRow,
} from './checks.js';
import { migrateVersionedMemory, VERSIONED_MEMORY_SCHEMA_VERSION, versionedMemorySchemaVersion } from './sqlite-schema.js';
import type { VersionedMemoryForgetEvent, VersionedMemoryReceipt, VersionedMemoryRecord, VersionedMemoryStore } from './types.js';

export interface SqliteVersionedMemoryStoreOptions {
  /**
   * Run `PRAGMA wal_checkpoint(TRUNCATE)` after each forget, so the WAL frames
   * that still held the forgotten text are written back and the WAL file is
   * emptied. A reader of this file that holds an older snapshot (an open read
   * transaction in another connection or process) keeps the WAL from being
   * truncated until it ends; the next forget's checkpoint, or SQLite's own,
   * then does it.
   * @default true
   */
  checkpointAfterForget?: boolean;
}

export interface SqliteVersionedMemoryStore extends VersionedMemoryStore {
  /** How many rows each versioned memory table holds now (for tests and operators). */
  rowCounts(): { scopes: number; records: number; revisions: number; receipts: number; forgotten: number };
}

const COLUMNS = 'v.scope_key, v.record_id, v.revision, v.text, v.origin, v.sources, v.status, v.operation_id, v.created_at, v.updated_at';
const LATEST = `FROM cairn_memory_v_records r JOIN cairn_memory_v_revisions v
  ON v.scope_key = r.scope_key AND v.record_id = r.record_id AND v.revision = r.latest_revision`;

/**
 * The versioned memory store in the file of `ops` (a store of
 * createSqliteOpsStore). Its tables are created or migrated here,
 * idempotently, and `secure_delete` is turned on for the connection (the ops
 * store's too: deleted content of any table on it is overwritten with zeros).
 * An ops store opened read-only gets a store that reads what is there and
 * refuses writes.
 *
 * @example
 * ```ts
 * const ops = createSqliteOpsStore({ path: './cairn.sqlite' });
 * const memory = createSqliteVersionedMemoryStore(ops);
 * ```
 */
export function createSqliteVersionedMemoryStore(ops: SqliteOpsStore, options: SqliteVersionedMemoryStoreOptions = {}): SqliteVersionedMemoryStore {
  if (options === null || typeof options !== 'object') throw new InvalidOptionsError('createSqliteVersionedMemoryStore: options must be an object.');
  if (options.checkpointAfterForget !== undefined && typeof options.checkpointAfterForget !== 'boolean') {
    throw new InvalidOptionsError('createSqliteVersionedMemoryStore: checkpointAfterForget must be a boolean.');
  }
  const checkpoint = options.checkpointAfterForget ?? true;
  const db = connectionOf(ops);
  db.pragma('secure_delete = ON');
  if (!db.readonly) migrateVersionedMemory(db);
  else {
    const version = versionedMemorySchemaVersion(db);
    if (version > VERSIONED_MEMORY_SCHEMA_VERSION) throw new VersionedMemorySchemaError('sqlite', version, VERSIONED_MEMORY_SCHEMA_VERSION);
    if (version === 0) return emptyReadOnly();
  }
  const s = statements(db);

  const commitTx = db.transaction((commit: ReturnType<typeof checkCommit>) => {
    const stored = s.receipt.get(commit.key, commit.operationId);
    if (stored !== undefined) return replayOf(JSON.parse(stored) as VersionedMemoryReceipt, commit);
    const latest = new Map<string, VersionedMemoryRecord>();
    for (const m of commit.mutations) {
      const row = s.latestOne.get(commit.key, m.id);
      if (row) latest.set(m.id, recordOfRow(row));
    }
    const plan = planCommit(commit, s.scopeRevision.get(commit.key) ?? 0, latest);
    plan.writes.forEach(({ record, op }, position) => {
      if (op === 'add') s.insertRecord.run(commit.key, record.id, plan.scopeRevision, position, plan.scopeRevision, record.status);
      else s.updateRecord.run(plan.scopeRevision, record.status, commit.key, record.id);
      s.insertRevision.run(commit.key, record.id, record.revision, record.text, record.origin, JSON.stringify(record.sources), record.status,
        record.operationId, record.createdAt, record.updatedAt);
    });
    s.putScope.run(commit.key, plan.scopeRevision);
    s.insertReceipt.run(commit.key, commit.operationId, commit.requestDigest, JSON.stringify(plan.receipt));
    return { receipt: copyReceipt(plan.receipt), replayed: false };
  });

  const forgetTx = db.transaction((forget: ReturnType<typeof checkForget>): VersionedMemoryForgetEvent => {
    const place = s.recordPlace.get(forget.key, forget.id);
    const taken = forgetRevisions(forget, place ? s.revisionsOf.all(forget.key, forget.id) : []);
    for (const revision of taken) {
      s.forgetRevision.run(forget.key, forget.id, revision);
      s.insertForgotten.run(forget.key, forget.id, revision, forget.at);
    }
    if (taken.includes(place!.latest_revision)) s.forgetRecord.run(forget.key, forget.id);
    return { scope: { ...forget.scope }, records: taken.map((revision) => ({ recordId: forget.id, revision })), forgottenAt: forget.at };
  });

  const guard = <T>(what: string, body: () => T): T => {
    try {
      return body();
    } catch (error) {
      throw storeFailure(`versioned memory ${what}`, error);
    }
  };

  return {
    async commit(input) {
      const commit = checkCommit(input);
      return guard('commit', () => commitTx.immediate(commit));
    },

    async receipt(input) {
      const read = checkReceiptRead(input);
      const body = guard('receipt', () => s.receipt.get(read.key, read.operationId));
      return body === undefined ? undefined : JSON.parse(body) as VersionedMemoryReceipt;
    },

    async get(input) {
      const read = checkIdRead(input, 'get');
      const row = guard('get', () => s.latestOne.get(read.key, read.id));
      return row ? recordOfRow(row) : undefined;
    },

    async history(input) {
      const read = checkIdRead(input, 'history');
      return guard('history', () => s.history.all(read.key, read.id)).map(recordOfRow);
    },

    async list(input) {
      const read = checkList(input);
      const rows = guard('list', () => s.list.all(read.key, read.includeRetracted ? 1 : 0, read.includeForgotten ? 1 : 0, read.limit ?? -1));
      return rows.map(recordOfRow);
    },

    async search(input) {
      const read = checkSearch(input);
      return rankVersioned(guard('search', () => s.active.all(read.key)).map(recordOfRow), read.text, read.limit);
    },

    async scopeRevision(input) {
      const { key } = checkScopeOf(input, 'scopeRevision');
      return guard('scopeRevision', () => s.scopeRevision.get(key)) ?? 0;
    },

    async forget(input) {
      const forget = checkForget(input);
      const event = guard('forget', () => forgetTx.immediate(forget));
      // After the commit: the frames of the WAL that held the text go back into the file, and the WAL is emptied.
      if (checkpoint) guard('forget checkpoint', () => db.pragma('wal_checkpoint(TRUNCATE)'));
      return event;
    },

    async forgotten(input) {
      const { key } = checkScopeOf(input, 'forgotten');
      return guard('forgotten', () => s.forgotten.all(key)).map((r) => ({ recordId: r.record_id, revision: r.revision, forgottenAt: r.forgotten_at }));
    },

    rowCounts() {
      const count = (table: string) => db.prepare(`SELECT COUNT(*) FROM ${table}`).pluck().get() as number;
      return {
        scopes: count('cairn_memory_v_scopes'), records: count('cairn_memory_v_records'), revisions: count('cairn_memory_v_revisions'),
        receipts: count('cairn_memory_v_receipts'), forgotten: count('cairn_memory_v_forgotten'),
      };
    },
  };
}

function statements(db: Database.Database) {
  return {
    scopeRevision: db.prepare<[string], number>('SELECT revision FROM cairn_memory_v_scopes WHERE scope_key = ?').pluck(),
    putScope: db.prepare<[string, number]>(`INSERT INTO cairn_memory_v_scopes (scope_key, revision) VALUES (?, ?)
  ON CONFLICT (scope_key) DO UPDATE SET revision = excluded.revision`),
    receipt: db.prepare<[string, string], string>('SELECT body FROM cairn_memory_v_receipts WHERE scope_key = ? AND operation_id = ?').pluck(),
    insertReceipt: db.prepare<[string, string, string, string]>(
      'INSERT INTO cairn_memory_v_receipts (scope_key, operation_id, request_digest, body) VALUES (?, ?, ?, ?)'),
    latestOne: db.prepare<[string, string], RevisionRow>(`SELECT ${COLUMNS} ${LATEST} WHERE r.scope_key = ? AND r.record_id = ?`),
    history: db.prepare<[string, string], RevisionRow>(
      `SELECT ${COLUMNS} FROM cairn_memory_v_revisions v WHERE v.scope_key = ? AND v.record_id = ? ORDER BY v.revision`),
    list: db.prepare<[string, number, number, number], RevisionRow>(`SELECT ${COLUMNS} ${LATEST} WHERE r.scope_key = ?
  AND (r.status = 'active' OR (r.status = 'retracted' AND ?) OR (r.status = 'forgotten' AND ?))
  ORDER BY r.first_revision, r.position LIMIT ?`),
    active: db.prepare<[string], RevisionRow>(`SELECT ${COLUMNS} ${LATEST} WHERE r.scope_key = ? AND r.status = 'active'
  ORDER BY r.first_revision, r.position`),
    insertRecord: db.prepare<[string, string, number, number, number, string]>(`INSERT INTO cairn_memory_v_records
  (scope_key, record_id, first_revision, position, latest_revision, status) VALUES (?, ?, ?, ?, ?, ?)`),
    updateRecord: db.prepare<[number, string, string, string]>(
      'UPDATE cairn_memory_v_records SET latest_revision = ?, status = ? WHERE scope_key = ? AND record_id = ?'),
    insertRevision: db.prepare<[string, string, number, string | null, string, string, string, string, number, number]>(`INSERT INTO cairn_memory_v_revisions
  (scope_key, record_id, revision, text, origin, sources, status, operation_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    recordPlace: db.prepare<[string, string], { latest_revision: number }>(
      'SELECT latest_revision FROM cairn_memory_v_records WHERE scope_key = ? AND record_id = ?'),
    revisionsOf: db.prepare<[string, string], number>(
      'SELECT revision FROM cairn_memory_v_revisions WHERE scope_key = ? AND record_id = ? ORDER BY revision').pluck(),
    forgetRevision: db.prepare<[string, string, number]>(`UPDATE cairn_memory_v_revisions SET text = NULL, status = 'forgotten'
  WHERE scope_key = ? AND record_id = ? AND revision = ?`),
    forgetRecord: db.prepare<[string, string]>("UPDATE cairn_memory_v_records SET status = 'forgotten' WHERE scope_key = ? AND record_id = ?"),
    insertForgotten: db.prepare<[string, string, number, number]>(
      'INSERT OR IGNORE INTO cairn_memory_v_forgotten (scope_key, record_id, revision, forgotten_at) VALUES (?, ?, ?, ?)'),
    forgotten: db.prepare<[string], { record_id: string; revision: number; forgotten_at: number }>(
      'SELECT record_id, revision, forgotten_at FROM cairn_memory_v_forgotten WHERE scope_key = ? ORDER BY rowid'),
  };
}

/** The store of a read-only file that has no versioned memory tables: nothing stored, every write refused. */
function emptyReadOnly(): SqliteVersionedMemoryStore {
  const refuse = async (): Promise<never> => {
    throw new InvalidOptionsError('The ops store was opened read-only: its versioned memory store cannot write.');
  };
  return {
    commit: async (input) => {
      checkCommit(input);
      return refuse();
    },
    receipt: async (input) => (checkReceiptRead(input), undefined),
    get: async (input) => (checkIdRead(input, 'get'), undefined),
    history: async (input) => (checkIdRead(input, 'history'), []),
    list: async (input) => (checkList(input), []),
    search: async (input) => (checkSearch(input), []),
    scopeRevision: async (input) => (checkScopeOf(input, 'scopeRevision'), 0),
    forget: async (input) => {
      checkForget(input);
      return refuse();
    },
    forgotten: async (input) => (checkScopeOf(input, 'forgotten'), []),
    rowCounts: () => ({ scopes: 0, records: 0, revisions: 0, receipts: 0, forgotten: 0 }),
  };
}

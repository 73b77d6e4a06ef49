/**
 * The SQLite swarm store: a swarm's record, its task rows (each task's run
 * envelope beside its task state), its journal and its blackboard, in four
 * tables of their own with their own schema-version table
 * (`cairn_swarm_schema`), apart from the ops store's migration chain. Every
 * write is one transaction: a step's record, task states and journal events
 * land together or not at all.
 */
import Database from 'better-sqlite3';
import { CairnError, InvalidOptionsError, PersistenceError, RevisionConflictError } from '../../errors/index.js';
import type { AgentRunEnvelope, AgentRunStore } from '../../agent/types.js';
import {
  checkEnvelopeArg, checkEvents, checkId, checkJournalRange, checkRecord, checkWrite, conflict, scopeMismatch,
} from '../store-kit.js';
import type { BlackboardEntry, SwarmJournalEvent, SwarmRecord, SwarmStore } from '../types.js';

/** The schema version this code writes; a file with a newer one is refused. */
export const SWARM_SQLITE_SCHEMA_VERSION = 1;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS cairn_swarm_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS cairn_swarms (
  swarm_id TEXT PRIMARY KEY, scope TEXT NOT NULL, revision INTEGER NOT NULL, status TEXT NOT NULL,
  journal_head INTEGER NOT NULL DEFAULT 0, record TEXT NOT NULL, updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS cairn_swarm_tasks (
  run_id TEXT PRIMARY KEY, swarm_id TEXT NOT NULL, task_id TEXT NOT NULL, scope TEXT NOT NULL, status TEXT NOT NULL,
  run_revision INTEGER NOT NULL DEFAULT 0, run_status TEXT, envelope TEXT, UNIQUE (swarm_id, task_id)
);
CREATE TABLE IF NOT EXISTS cairn_swarm_journal (
  swarm_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, task_id TEXT, data TEXT, at INTEGER NOT NULL,
  PRIMARY KEY (swarm_id, seq)
);
CREATE TABLE IF NOT EXISTS cairn_swarm_blackboard (
  swarm_id TEXT NOT NULL, write_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, task_id TEXT NOT NULL,
  version INTEGER NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (swarm_id, write_id), UNIQUE (swarm_id, key, version)
);`;

export interface SqliteSwarmStoreOptions {
  /** The database file (created if missing). */
  path: string;
  /** How long a write waits for another connection's lock (ms). @default 5000 */
  busyTimeoutMs?: number;
}

export interface SqliteSwarmStore extends SwarmStore {
  close(): void;
}

interface BoardRow { key: string; value: string; task_id: string; write_id: string; version: number; at: number }

const entryOf = (row: BoardRow): BlackboardEntry => ({
  key: row.key, value: JSON.parse(row.value), taskId: row.task_id, writeId: row.write_id, version: Number(row.version), at: Number(row.at),
});

/**
 * Opens (and sets up, idempotently) a swarm store in an SQLite file. Two
 * processes may open the same file: SQLite's lock orders their writes.
 *
 * @example
 * ```ts
 * const store = createSqliteSwarmStore({ path: 'swarms.sqlite' });
 * await runAgentGroup({ session: { store, swarmId: 's1', scope: 'tenant-a' }, tasks });
 * store.close();
 * ```
 */
export function createSqliteSwarmStore(options: SqliteSwarmStoreOptions): SqliteSwarmStore {
  if (!options || typeof options.path !== 'string' || options.path === '') throw new InvalidOptionsError('createSqliteSwarmStore needs { path }.');
  const db = new Database(options.path, { timeout: options.busyTimeoutMs ?? 5000 });
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    setUp(db);
  } catch (error) {
    db.close();
    throw error;
  }
  const s = {
    swarm: db.prepare('SELECT scope, revision, record, journal_head FROM cairn_swarms WHERE swarm_id = ?'),
    insertSwarm: db.prepare('INSERT INTO cairn_swarms (swarm_id, scope, revision, status, record, updated_at) VALUES (?, ?, ?, ?, ?, ?)'),
    updateSwarm: db.prepare('UPDATE cairn_swarms SET revision = ?, status = ?, record = ?, updated_at = ?, journal_head = ? WHERE swarm_id = ? AND revision = ?'),
    head: db.prepare('UPDATE cairn_swarms SET journal_head = journal_head + 1 WHERE swarm_id = ? RETURNING journal_head'),
    task: db.prepare('SELECT swarm_id, scope, run_revision, envelope FROM cairn_swarm_tasks WHERE run_id = ?'),
    upsertTask: db.prepare(`INSERT INTO cairn_swarm_tasks (run_id, swarm_id, task_id, scope, status) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (run_id) DO UPDATE SET status = excluded.status WHERE cairn_swarm_tasks.swarm_id = excluded.swarm_id`),
    saveRun: db.prepare('UPDATE cairn_swarm_tasks SET envelope = ?, run_revision = ?, run_status = ? WHERE run_id = ? AND run_revision = ?'),
    append: db.prepare('INSERT INTO cairn_swarm_journal (swarm_id, seq, type, task_id, data, at) VALUES (?, ?, ?, ?, ?, ?)'),
    journal: db.prepare('SELECT seq, type, task_id, data, at FROM cairn_swarm_journal WHERE swarm_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
    written: db.prepare('SELECT key, value, task_id, write_id, version, at FROM cairn_swarm_blackboard WHERE swarm_id = ? AND write_id = ?'),
    latestVersion: db.prepare('SELECT MAX(version) AS v FROM cairn_swarm_blackboard WHERE swarm_id = ? AND key = ?'),
    write: db.prepare('INSERT INTO cairn_swarm_blackboard (swarm_id, write_id, key, value, task_id, version, at) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    board: db.prepare(`SELECT b.key, b.value, b.task_id, b.write_id, b.version, b.at FROM cairn_swarm_blackboard b
WHERE b.swarm_id = ? AND b.version = (SELECT MAX(version) FROM cairn_swarm_blackboard c WHERE c.swarm_id = b.swarm_id AND c.key = b.key) ORDER BY b.key`),
  };

  const saveSwarm = db.transaction((record: SwarmRecord, events: SwarmRecordEvents): SwarmJournalEvent[] => {
    const row = s.swarm.get(record.swarmId) as { scope: string; revision: number; journal_head: number } | undefined;
    if (row && row.scope !== record.scope) throw scopeMismatch(record.swarmId);
    const stored = row ? Number(row.revision) : 0;
    if (record.revision !== stored + 1) throw conflict(record.swarmId, record, row ? stored : null);
    const head = row ? Number(row.journal_head) : 0;
    const text = JSON.stringify(record);
    if (row) s.updateSwarm.run(record.revision, record.status, text, record.updatedAt, head + events.length, record.swarmId, stored);
    else {
      s.insertSwarm.run(record.swarmId, record.scope, record.revision, record.status, text, record.updatedAt);
      db.prepare('UPDATE cairn_swarms SET journal_head = ? WHERE swarm_id = ?').run(events.length, record.swarmId);
    }
    for (const [taskId, task] of Object.entries(record.tasks)) {
      if (s.upsertTask.run(task.runId, record.swarmId, taskId, record.scope, task.status).changes !== 1) {
        throw new PersistenceError(`Run ${task.runId} belongs to another swarm.`);
      }
    }
    return events.map((e, i) => {
      const event: SwarmJournalEvent = { ...e, swarmId: record.swarmId, seq: head + i + 1, at: record.updatedAt };
      s.append.run(record.swarmId, event.seq, e.type, e.taskId ?? null, e.data === undefined ? null : JSON.stringify(e.data), event.at);
      return event;
    });
  });

  const writeBlackboard = db.transaction((swarmId: string, write: Parameters<SwarmStore['writeBlackboard']>[1]) => {
    const done = s.written.get(swarmId, write.writeId) as BoardRow | undefined;
    if (done) return { applied: false, entry: entryOf(done) };
    const head = s.head.get(swarmId) as { journal_head: number } | undefined;
    if (!head) throw new PersistenceError(`No swarm ${swarmId} in this store: a blackboard belongs to a saved swarm.`);
    const version = Number((s.latestVersion.get(swarmId, write.key) as { v: number | null }).v ?? 0) + 1;
    s.write.run(swarmId, write.writeId, write.key, JSON.stringify(write.value), write.taskId, version, write.at);
    s.append.run(swarmId, Number(head.journal_head), 'blackboard-written', write.taskId, JSON.stringify({ key: write.key, version, writeId: write.writeId }), write.at);
    return { applied: true, entry: { key: write.key, value: JSON.parse(JSON.stringify(write.value)), taskId: write.taskId, writeId: write.writeId, version, at: write.at } };
  });

  const saveRun = db.transaction((envelope: AgentRunEnvelope) => {
    const row = s.task.get(envelope.runId) as { scope: string; run_revision: number; envelope: string | null } | undefined;
    if (!row) throw new PersistenceError(`Run ${envelope.runId} is not a task of a swarm in this store; a swarm's store keeps its tasks' runs only.`);
    if (row.scope !== envelope.scope) throw scopeMismatch(envelope.runId);
    const stored = Number(row.run_revision);
    if (envelope.revision !== stored + 1) throw new RevisionConflictError(envelope.runId, envelope.revision - 1, row.envelope === null ? null : stored);
    s.saveRun.run(JSON.stringify(envelope), envelope.revision, envelope.status, envelope.runId, stored);
  });

  const runs: AgentRunStore = {
    load: guard('load', async (runId: string, opts?: { scope?: string }) => {
      const row = s.task.get(runId) as { scope: string; envelope: string | null } | undefined;
      if (!row || row.envelope === null) return undefined;
      if (opts?.scope !== undefined && opts.scope !== row.scope) throw scopeMismatch(runId);
      return decode<AgentRunEnvelope>(row.envelope, runId);
    }),
    save: guard('save', async (envelope: AgentRunEnvelope) => {
      checkEnvelopeArg(envelope);
      saveRun(envelope);
    }),
  };

  return {
    runs,
    loadSwarm: guard('loadSwarm', async (swarmId: string, opts: { scope: string }) => {
      checkId(swarmId, 'swarmId');
      const row = s.swarm.get(swarmId) as { scope: string; record: string } | undefined;
      if (!row) return undefined;
      if (row.scope !== opts?.scope) throw scopeMismatch(swarmId);
      return decode<SwarmRecord>(row.record, swarmId);
    }),
    saveSwarm: guard('saveSwarm', async (record: SwarmRecord, events: SwarmRecordEvents) => {
      checkRecord(record);
      checkEvents(events);
      return saveSwarm(record, events);
    }),
    readJournal: guard('readJournal', async (swarmId: string, opts?: { after?: number; limit?: number }) => {
      checkId(swarmId, 'swarmId');
      const { after, limit } = checkJournalRange(opts);
      return (s.journal.all(swarmId, after, limit) as Array<{ seq: number; type: string; task_id: string | null; data: string | null; at: number }>).map((r) => ({
        swarmId, seq: Number(r.seq), type: r.type as SwarmJournalEvent['type'], at: Number(r.at),
        ...(r.task_id !== null ? { taskId: r.task_id } : {}), ...(r.data !== null ? { data: JSON.parse(r.data) } : {}),
      }));
    }),
    writeBlackboard: guard('writeBlackboard', async (swarmId: string, write: Parameters<SwarmStore['writeBlackboard']>[1]) => {
      checkId(swarmId, 'swarmId');
      checkWrite(write);
      return writeBlackboard(swarmId, write);
    }),
    readBlackboard: guard('readBlackboard', async (swarmId: string, key?: string) => {
      checkId(swarmId, 'swarmId');
      return (s.board.all(swarmId) as BoardRow[]).map(entryOf).filter((e) => key === undefined || e.key === key);
    }),
    close: () => db.close(),
  };
}

type SwarmRecordEvents = Parameters<SwarmStore['saveSwarm']>[1];

function setUp(db: Database.Database): void {
  db.exec(SCHEMA);
  const row = db.prepare('SELECT version FROM cairn_swarm_schema').get() as { version: number } | undefined;
  if (!row) db.prepare('INSERT INTO cairn_swarm_schema (version) VALUES (?)').run(SWARM_SQLITE_SCHEMA_VERSION);
  else if (Number(row.version) > SWARM_SQLITE_SCHEMA_VERSION) {
    throw new CairnError('record_version_unsupported', `The swarm tables are at schema version ${row.version}; this code knows ${SWARM_SQLITE_SCHEMA_VERSION}. Nothing was read or changed.`, { fault: 'user' });
  }
}

function decode<T>(text: string, id: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    throw new CairnError('record_corrupt', `The stored record of ${id} does not decode.`, { fault: 'dependency', cause: error });
  }
}

/** The driver's failures as PersistenceError (its error kept as the cause); Cairn's own errors pass as they are. */
function guard<A extends unknown[], R>(what: string, call: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args: A) => {
    try {
      return await call(...args);
    } catch (error) {
      if (CairnError.isInstance(error)) throw error;
      throw new PersistenceError(`The SQLite swarm store's ${what} failed: ${error instanceof Error ? error.message : String(error)}`, error);
    }
  };
}

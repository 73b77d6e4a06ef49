/**
 * The ops store's schema: an append-only list of migrations whose position is
 * the version, applied idempotently every time a store opens the file.
 *
 * Never edit or reorder a shipped migration: a database that already ran it
 * would not run the new text. Add a migration at the end instead.
 */
import Database from 'better-sqlite3';
import { CairnError } from '../../errors/index.js';

/**
 * Migration N (1-based) is `MIGRATIONS[N - 1]`; a database at version N has run
 * the first N. Each entry is a list of statements run in one transaction.
 */
export const MIGRATIONS: readonly (readonly string[])[] = [
  [
    `CREATE TABLE cairn_runs (
  run_id               TEXT    PRIMARY KEY,
  scope                TEXT    NOT NULL,
  status               TEXT    NOT NULL,
  revision             INTEGER NOT NULL,
  binding_id           TEXT,
  created_at           INTEGER NOT NULL,
  updated_at           INTEGER NOT NULL,
  pending_approvals    INTEGER NOT NULL,
  pending_client_calls INTEGER NOT NULL,
  transcript_length    INTEGER NOT NULL,
  transcript_digest    BLOB    NOT NULL,
  receipts_digest      BLOB    NOT NULL,
  head                 BLOB    NOT NULL
)`,
    'CREATE INDEX cairn_runs_by_update ON cairn_runs (updated_at DESC, run_id DESC)',
    'CREATE INDEX cairn_runs_by_status ON cairn_runs (status, updated_at)',
    'CREATE INDEX cairn_runs_by_scope ON cairn_runs (scope, updated_at DESC, run_id DESC)',
    `CREATE TABLE cairn_run_messages (
  run_id TEXT    NOT NULL REFERENCES cairn_runs (run_id) ON DELETE CASCADE,
  idx    INTEGER NOT NULL,
  body   BLOB    NOT NULL,
  PRIMARY KEY (run_id, idx)
)`,
    `CREATE TABLE cairn_run_receipts (
  run_id      TEXT    NOT NULL REFERENCES cairn_runs (run_id) ON DELETE CASCADE,
  receipt_key TEXT    NOT NULL,
  model_step  INTEGER NOT NULL,
  body        BLOB    NOT NULL,
  PRIMARY KEY (run_id, receipt_key)
)`,
    `CREATE TABLE cairn_leases (
  lease_key  TEXT    PRIMARY KEY,
  owner      TEXT    NOT NULL,
  token      INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  drain      INTEGER NOT NULL DEFAULT 0
)`,
  ],
  // 2: the circuit breakers the workers share, one row per provider:model.
  [
    `CREATE TABLE cairn_breakers (
  key            TEXT    PRIMARY KEY,
  failures       INTEGER NOT NULL,
  cooldown_until INTEGER,
  updated_at     INTEGER NOT NULL
)`,
  ],
  // 3: the UI replay journal: a row per stream (its head, scope and age), a row per frame.
  [
    `CREATE TABLE cairn_journal_streams (
  stream_id  TEXT    PRIMARY KEY,
  scope      TEXT,
  last_seq   INTEGER NOT NULL,
  ended      INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
)`,
    'CREATE INDEX cairn_journal_streams_by_update ON cairn_journal_streams (updated_at)',
    `CREATE TABLE cairn_journal_frames (
  stream_id TEXT    NOT NULL REFERENCES cairn_journal_streams (stream_id) ON DELETE CASCADE,
  seq       INTEGER NOT NULL,
  body      TEXT    NOT NULL,
  ends_leg  INTEGER NOT NULL,
  PRIMARY KEY (stream_id, seq)
)`,
  ],
  // 4: the shared budget ledgers: a row per reservation, keyed by the ledger's name and the entry's id.
  [
    `CREATE TABLE cairn_budget_entries (
  ledger          TEXT    NOT NULL,
  entry_id        TEXT    NOT NULL,
  scope           TEXT    NOT NULL,
  run_id          TEXT,
  model           TEXT    NOT NULL,
  status          TEXT    NOT NULL,
  estimate_usd    REAL,
  estimate_tokens INTEGER NOT NULL,
  usd             REAL,
  tokens          INTEGER NOT NULL,
  at              INTEGER NOT NULL,
  PRIMARY KEY (ledger, entry_id)
)`,
  ],
  // 5: a running run's save writes no index: the list and prune indexes hold
  // only runs at rest (a running run's save changes its updated_at, and every
  // index on it took a write at every commit), and running runs are found
  // through an index of their scope, which their saves never change. Each
  // transcript and receipt row also keeps the revision of the save that wrote
  // it (NULL for rows written before this version).
  [
    'ALTER TABLE cairn_run_messages ADD COLUMN revision INTEGER',
    'ALTER TABLE cairn_run_receipts ADD COLUMN revision INTEGER',
    'DROP INDEX cairn_runs_by_update',
    'DROP INDEX cairn_runs_by_status',
    'DROP INDEX cairn_runs_by_scope',
    "CREATE INDEX cairn_runs_at_rest_by_update ON cairn_runs (updated_at DESC, run_id DESC) WHERE status <> 'running'",
    "CREATE INDEX cairn_runs_at_rest_by_status ON cairn_runs (status, updated_at) WHERE status <> 'running'",
    "CREATE INDEX cairn_runs_at_rest_by_scope ON cairn_runs (scope, updated_at DESC, run_id DESC) WHERE status <> 'running'",
    "CREATE INDEX cairn_runs_running ON cairn_runs (scope) WHERE status = 'running'",
  ],
  // 6: memories (one row per record, unique per scope and content hash, with
  // the operation id an extraction stamped on it, its embedding as
  // little-endian float64s) and chat projections (one row per chat: its
  // revision, and its record as JSON text, NULL for a deleted chat's tombstone).
  [
    `CREATE TABLE cairn_memories (
  id           TEXT PRIMARY KEY,
  scope_key    TEXT NOT NULL,
  user_id      TEXT,
  agent_id     TEXT,
  chat_id      TEXT,
  hash         TEXT NOT NULL,
  text         TEXT NOT NULL,
  metadata     TEXT NOT NULL,
  operation_id TEXT,
  embedding    BLOB,
  embedding_model TEXT,
  expires_at   REAL,
  created_at   REAL NOT NULL,
  updated_at   REAL NOT NULL,
  UNIQUE (scope_key, hash)
)`,
    'CREATE INDEX cairn_memories_by_user ON cairn_memories (user_id, created_at)',
    'CREATE INDEX cairn_memories_by_agent ON cairn_memories (agent_id, created_at)',
    'CREATE INDEX cairn_memories_by_chat ON cairn_memories (chat_id, created_at)',
    'CREATE INDEX cairn_memories_by_operation ON cairn_memories (operation_id) WHERE operation_id IS NOT NULL',
    `CREATE TABLE cairn_chats (
  chat_id  TEXT    PRIMARY KEY,
  revision INTEGER NOT NULL,
  record   TEXT
)`,
  ],
  // 7: sessions (cairn/sessions/sqlite): one row a session, its revision moved by every turn, and one row a turn.
  [
    `CREATE TABLE cairn_sessions (
  session_id TEXT    PRIMARY KEY,
  app_name   TEXT    NOT NULL,
  user_id    TEXT    NOT NULL,
  revision   INTEGER NOT NULL,
  created_at REAL    NOT NULL,
  updated_at REAL    NOT NULL
)`,
    'CREATE INDEX cairn_sessions_by_owner ON cairn_sessions (app_name, user_id, created_at, session_id)',
    `CREATE TABLE cairn_session_turns (
  session_id TEXT    NOT NULL REFERENCES cairn_sessions (session_id) ON DELETE CASCADE,
  revision   INTEGER NOT NULL,
  turn_id    TEXT    NOT NULL,
  body       TEXT    NOT NULL,
  PRIMARY KEY (session_id, revision),
  UNIQUE (session_id, turn_id)
)`,
  ],
  // 8: a run's transcript and receipt rows are keyed by one integer, so each table is one b-tree and an insert
  // writes no second index (see run-rows.ts). A head row is padded with zeros (pad) to a size class, so a running
  // run's next save is most often the same size and SQLite rewrites it where it is (see run-rows.ts, headPad). Every run gets a number that is never reused (run_no); its rows'
  // keys are run_no * 2^32 plus the message's index, or plus the receipt's model step * 2^12 and its place
  // among that step's receipts. The rows keep run_id, idx and receipt_key as plain columns. The three tables
  // are rebuilt and their rows copied, children first (dropping cairn_runs first would cascade).
  [
    `CREATE TABLE cairn_runs_v8 (
  run_no               INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id               TEXT    NOT NULL UNIQUE,
  scope                TEXT    NOT NULL,
  status               TEXT    NOT NULL,
  revision             INTEGER NOT NULL,
  binding_id           TEXT,
  created_at           INTEGER NOT NULL,
  updated_at           INTEGER NOT NULL,
  pending_approvals    INTEGER NOT NULL,
  pending_client_calls INTEGER NOT NULL,
  transcript_length    INTEGER NOT NULL,
  transcript_digest    BLOB    NOT NULL,
  receipts_digest      BLOB    NOT NULL,
  head                 BLOB    NOT NULL,
  pad                  BLOB
)`,
    `INSERT INTO cairn_runs_v8 (run_id, scope, status, revision, binding_id, created_at, updated_at, pending_approvals,
  pending_client_calls, transcript_length, transcript_digest, receipts_digest, head)
SELECT run_id, scope, status, revision, binding_id, created_at, updated_at, pending_approvals,
  pending_client_calls, transcript_length, transcript_digest, receipts_digest, head FROM cairn_runs ORDER BY rowid`,
    `CREATE TABLE cairn_run_messages_v8 (
  row_key  INTEGER PRIMARY KEY,
  run_id   TEXT    NOT NULL,
  idx      INTEGER NOT NULL,
  body     BLOB    NOT NULL,
  revision INTEGER
)`,
    `INSERT INTO cairn_run_messages_v8 (row_key, run_id, idx, body, revision)
SELECT r.run_no * 4294967296 + m.idx, m.run_id, m.idx, m.body, m.revision
FROM cairn_run_messages m JOIN cairn_runs_v8 r ON r.run_id = m.run_id`,
    `CREATE TABLE cairn_run_receipts_v8 (
  row_key     INTEGER PRIMARY KEY,
  run_id      TEXT    NOT NULL,
  receipt_key TEXT    NOT NULL,
  model_step  INTEGER NOT NULL,
  body        BLOB    NOT NULL,
  revision    INTEGER
)`,
    `INSERT INTO cairn_run_receipts_v8 (row_key, run_id, receipt_key, model_step, body, revision)
SELECT run_no * 4294967296 + step_bucket * 4096 + place, run_id, receipt_key, model_step, body, revision FROM (
  SELECT r.run_no, c.run_id, c.receipt_key, c.model_step, c.body, c.revision,
    MIN(MAX(CAST(c.model_step AS INTEGER), 0), 1048575) AS step_bucket,
    ROW_NUMBER() OVER (PARTITION BY c.run_id, MIN(MAX(CAST(c.model_step AS INTEGER), 0), 1048575) ORDER BY c.receipt_key) - 1 AS place
  FROM cairn_run_receipts c JOIN cairn_runs_v8 r ON r.run_id = c.run_id)`,
    'DROP TABLE cairn_run_messages',
    'DROP TABLE cairn_run_receipts',
    'DROP TABLE cairn_runs',
    'ALTER TABLE cairn_runs_v8 RENAME TO cairn_runs',
    'ALTER TABLE cairn_run_messages_v8 RENAME TO cairn_run_messages',
    'ALTER TABLE cairn_run_receipts_v8 RENAME TO cairn_run_receipts',
    "CREATE INDEX cairn_runs_at_rest_by_update ON cairn_runs (updated_at DESC, run_id DESC) WHERE status <> 'running'",
    "CREATE INDEX cairn_runs_at_rest_by_status ON cairn_runs (status, updated_at) WHERE status <> 'running'",
    "CREATE INDEX cairn_runs_at_rest_by_scope ON cairn_runs (scope, updated_at DESC, run_id DESC) WHERE status <> 'running'",
    "CREATE INDEX cairn_runs_running ON cairn_runs (scope) WHERE status = 'running'",
  ],
  // 9: no table changes. A head row's head holds, at its end, what the run never changes (its binding and its
  // context's settings, see record.ts, HeadTail), after zeros that put those bytes on overflow pages of their own,
  // and its pad column is left empty (see run-rows.ts, headFill). A Cairn that knows only schema 8 would read such
  // a head without them, so the version says it cannot open the file.
  [],
];

/** The schema version this code writes: the number of migrations it knows. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * The page size of a file this code creates. SQLite's WAL logs whole pages: a
 * commit writes a frame (the page and a 24 B header) for every page it
 * changes, and a durable step's two commits each change a handful of pages
 * (the head row's leaf, a transcript leaf and its key's index leaf, a receipt
 * leaf and its index leaf, page 1 when the file grows). With SQLite's default
 * 4,096 B pages a step of about 1 kB of data wrote about 41 kB to the log;
 * with 1,024 B pages about 24 kB, the saves taking no longer (bench/wal.ts).
 * Smaller still (512 B) writes less again but splits a transcript row or a
 * receipt of a few hundred bytes across overflow pages and reads a run back
 * more slowly. A file keeps the page size it was created with: an existing
 * file opens as it is.
 */
export const NEW_FILE_PAGE_SIZE = 1024;

/** The database was set up by a newer Cairn: this code does not know its schema and refuses to touch it. */
export class StoreSchemaVersionError extends CairnError {
  readonly backend = 'sqlite' as const;
  constructor(readonly found: number, readonly supported: number) {
    super(
      'record_version_unsupported',
      `The ops database has schema version ${found}; this Cairn knows versions up to ${supported}. Upgrade Cairn to open it.`,
      { fault: 'user' },
    );
    this.name = 'StoreSchemaVersionError';
  }
}

/** @internal Takes or gives a better-sqlite3 handle, whose types stay out of the published declarations (a user need not install @types/better-sqlite3). */
export interface OpenOptions {
  path: string;
  synchronous: 'full' | 'normal';
  busyTimeoutMs: number;
  /**
   * Run on the fresh connection before anything is written (the WAL switch, the
   * migrations); throws to refuse the file. With a check, the file must exist.
   */
  check?: (db: Database.Database) => void;
}

/**
 * Opens the file (creating it), sets the connection up and brings the schema to
 * {@link SCHEMA_VERSION}. Several processes may do this at once: the
 * migrations run in an IMMEDIATE transaction, so one applies them and the
 * others find them applied.
 * @internal Takes or gives a better-sqlite3 handle, whose types stay out of the published declarations (a user need not install @types/better-sqlite3).
 */
export function openDatabase(options: OpenOptions): Database.Database {
  const db = new Database(options.path, { timeout: options.busyTimeoutMs, fileMustExist: options.check !== undefined });
  try {
    options.check?.(db);
    // Takes effect only on a file with nothing in it yet (before the WAL switch, which writes the first page);
    // on any other file SQLite ignores it and keeps the file's page size.
    db.pragma(`page_size = ${NEW_FILE_PAGE_SIZE}`);
    // WAL: readers never block the writer and the writer never blocks readers.
    // The mode is stored in the file; asking again is a no-op.
    enterWal(db, Date.now() + options.busyTimeoutMs);
    db.pragma(`synchronous = ${options.synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
    db.pragma('foreign_keys = ON');
    db.pragma(`busy_timeout = ${Math.floor(options.busyTimeoutMs)}`);
    migrate(db);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Switches a new file to WAL. Two processes opening the same new file at once
 * may both read it and then both ask for the exclusive lock the switch needs;
 * SQLite then answers one of them SQLITE_BUSY at once, without waiting (its
 * busy timeout cannot break that deadlock). The loser tries again, briefly
 * blocking (opening is synchronous), until the busy timeout has passed.
 */
function enterWal(db: Database.Database, deadline: number): void {
  for (let wait = 5; ; wait = Math.min(wait * 2, 100)) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw error;
    }
    Atomics.wait(pause, 0, 0, wait);
  }
}

function migrate(db: Database.Database): void {
  const apply = db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS cairn_ops_schema (
  version    INTEGER PRIMARY KEY,
  applied_at INTEGER NOT NULL
)`);
    const row = db.prepare('SELECT MAX(version) AS version FROM cairn_ops_schema').get() as { version: number | null };
    const current = row.version ?? 0;
    if (current > SCHEMA_VERSION) throw new StoreSchemaVersionError(current, SCHEMA_VERSION);
    const record = db.prepare('INSERT INTO cairn_ops_schema (version, applied_at) VALUES (?, ?)');
    for (let version = current + 1; version <= SCHEMA_VERSION; version++) {
      for (const statement of MIGRATIONS[version - 1]!) db.exec(statement);
      // Wall time on purpose: this records when a file was upgraded, not a run's time.
      record.run(version, Date.now());
    }
  });
  apply.immediate();
}

/**
 * The ops schema, as an append-only array of migrations: migration N is
 * `MIGRATIONS[N - 1]` and brings the schema to version N; `SCHEMA_VERSION` is
 * the newest this code knows. Never edit or reorder an entry that has
 * shipped; append a new one. The statements name tables unqualified: setup()
 * runs them with the store's schema as the search path.
 *
 * `cairn_ops_schema` records one row per applied migration. setup() applies
 * the missing ones in one transaction under an advisory lock, so processes
 * that start together migrate once; a database at a version newer than the
 * code is refused with StoreSchemaVersionError and left as it is.
 */
import type { Db } from './sql.js';
import { StoreSchemaVersionError } from './errors.js';

/** Qualified, quoted names of the ops tables in one schema. */
export interface OpsTables {
  schema: string;
  version: string;
  runs: string;
  messages: string;
  receipts: string;
  leases: string;
  breakers: string;
  journalStreams: string;
  journalFrames: string;
  budgetLedgers: string;
  budgetEntries: string;
}

export function opsTables(quotedSchema: string): OpsTables {
  return {
    schema: quotedSchema,
    version: `${quotedSchema}.cairn_ops_schema`,
    runs: `${quotedSchema}.cairn_runs`,
    messages: `${quotedSchema}.cairn_run_messages`,
    receipts: `${quotedSchema}.cairn_run_receipts`,
    leases: `${quotedSchema}.cairn_leases`,
    breakers: `${quotedSchema}.cairn_breakers`,
    journalStreams: `${quotedSchema}.cairn_journal_streams`,
    journalFrames: `${quotedSchema}.cairn_journal_frames`,
    budgetLedgers: `${quotedSchema}.cairn_budget_ledgers`,
    budgetEntries: `${quotedSchema}.cairn_budget_entries`,
  };
}

/** Append-only: `MIGRATIONS[N - 1]` holds the statements of migration N. */
export const MIGRATIONS: readonly (readonly string[])[] = [
  // 1: runs (head + summary columns), transcript messages, receipts, leases.
  [
    `CREATE TABLE cairn_runs (
  run_id               text             PRIMARY KEY,
  scope                text             NOT NULL,
  status               text             NOT NULL,
  revision             integer          NOT NULL,
  binding_id           text,
  created_at           double precision NOT NULL,
  updated_at           double precision NOT NULL,
  pending_approvals    integer          NOT NULL,
  pending_client_calls integer          NOT NULL,
  head                 bytea            NOT NULL,
  transcript_length    integer          NOT NULL,
  transcript_hash      bytea            NOT NULL,
  transcript_digest    bytea            NOT NULL,
  receipts_digest      bytea            NOT NULL,
  settled_step         integer          NOT NULL,
  settled_hash         bytea            NOT NULL
)`,
    'CREATE INDEX cairn_runs_by_update ON cairn_runs (updated_at DESC, run_id DESC)',
    'CREATE INDEX cairn_runs_by_status ON cairn_runs (status, updated_at)',
    'CREATE INDEX cairn_runs_by_scope ON cairn_runs (scope, updated_at DESC, run_id DESC)',
    `CREATE TABLE cairn_run_messages (
  run_id text    NOT NULL REFERENCES cairn_runs (run_id) ON DELETE CASCADE,
  idx    integer NOT NULL,
  body   bytea   NOT NULL,
  PRIMARY KEY (run_id, idx)
)`,
    `CREATE TABLE cairn_run_receipts (
  run_id     text    NOT NULL REFERENCES cairn_runs (run_id) ON DELETE CASCADE,
  key        text    NOT NULL,
  model_step integer NOT NULL,
  body       bytea   NOT NULL,
  PRIMARY KEY (run_id, key)
)`,
    `CREATE TABLE cairn_leases (
  key        text        PRIMARY KEY,
  owner      text        NOT NULL,
  token      bigint      NOT NULL,
  expires_at timestamptz NOT NULL,
  drain      boolean     NOT NULL DEFAULT false
)`,
  ],
  // 2: a save checks the rows it leaves alone against the set digests alone
  // (transcript_digest, and receipts_digest without the unsettled rows), which
  // it updates for the rows it writes; the whole-history hashes that every
  // save recomputed go.
  [
    'ALTER TABLE cairn_runs DROP COLUMN transcript_hash, DROP COLUMN settled_hash',
  ],
  // 3: the circuit breakers the workers share, one row per provider:model.
  [
    `CREATE TABLE cairn_breakers (
  key            text        PRIMARY KEY,
  failures       integer     NOT NULL,
  cooldown_until bigint,
  updated_at     timestamptz NOT NULL DEFAULT now()
)`,
  ],
  // 4: the UI replay journal: a row per stream (its head, scope and age, in ms
  // on the database clock), a row per frame.
  [
    `CREATE TABLE cairn_journal_streams (
  stream_id  text             PRIMARY KEY,
  scope      text,
  last_seq   bigint           NOT NULL,
  ended      boolean          NOT NULL,
  updated_at double precision NOT NULL
)`,
    'CREATE INDEX cairn_journal_streams_by_update ON cairn_journal_streams (updated_at)',
    `CREATE TABLE cairn_journal_frames (
  stream_id text    NOT NULL REFERENCES cairn_journal_streams (stream_id) ON DELETE CASCADE,
  seq       bigint  NOT NULL,
  body      text    NOT NULL,
  ends_leg  boolean NOT NULL,
  PRIMARY KEY (stream_id, seq)
)`,
  ],
  // 5: the shared budget ledgers: a row per ledger (the row every write locks
  // first) and a row per reservation.
  [
    `CREATE TABLE cairn_budget_ledgers (
  name       text        PRIMARY KEY,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
)`,
    `CREATE TABLE cairn_budget_entries (
  ledger          text             NOT NULL REFERENCES cairn_budget_ledgers (name) ON DELETE CASCADE,
  entry_id        text             NOT NULL,
  scope           text             NOT NULL,
  run_id          text,
  model           text             NOT NULL,
  status          text             NOT NULL,
  estimate_usd    double precision,
  estimate_tokens bigint           NOT NULL,
  usd             double precision,
  tokens          bigint           NOT NULL,
  at              double precision NOT NULL,
  PRIMARY KEY (ledger, entry_id)
)`,
  ],
  // 6: a running run's save adds no list-index entries: the list and prune
  // indexes hold only runs at rest (a running run's save changes updated_at,
  // so each save put a new entry in every index on it), and running runs are
  // found through an index of their scope. Each transcript and receipt row
  // also keeps the revision of the save that wrote it (NULL before this).
  [
    'ALTER TABLE cairn_run_messages ADD COLUMN revision integer',
    'ALTER TABLE cairn_run_receipts ADD COLUMN revision integer',
    'DROP INDEX cairn_runs_by_update',
    'DROP INDEX cairn_runs_by_status',
    'DROP INDEX cairn_runs_by_scope',
    "CREATE INDEX cairn_runs_at_rest_by_update ON cairn_runs (updated_at DESC, run_id DESC) WHERE status <> 'running'",
    "CREATE INDEX cairn_runs_at_rest_by_status ON cairn_runs (status, updated_at) WHERE status <> 'running'",
    "CREATE INDEX cairn_runs_at_rest_by_scope ON cairn_runs (scope, updated_at DESC, run_id DESC) WHERE status <> 'running'",
    "CREATE INDEX cairn_runs_running ON cairn_runs (scope) WHERE status = 'running'",
  ],
  // 7: memories (one row per record, unique per scope and content hash, with
  // the operation id an extraction stamped on it, its embedding as
  // little-endian float64s) and chat projections (one row per chat: its
  // revision, and its record as JSON text, NULL for a deleted chat's tombstone).
  [
    `CREATE TABLE cairn_memories (
  id           text PRIMARY KEY,
  scope_key    text NOT NULL,
  user_id      text,
  agent_id     text,
  chat_id      text,
  hash         text NOT NULL,
  text         text NOT NULL,
  metadata     text NOT NULL,
  operation_id text,
  embedding    bytea,
  embedding_model text,
  expires_at   double precision,
  created_at   double precision NOT NULL,
  updated_at   double precision NOT NULL,
  UNIQUE (scope_key, hash)
)`,
    'CREATE INDEX cairn_memories_by_user ON cairn_memories (user_id, created_at)',
    'CREATE INDEX cairn_memories_by_agent ON cairn_memories (agent_id, created_at)',
    'CREATE INDEX cairn_memories_by_chat ON cairn_memories (chat_id, created_at)',
    'CREATE INDEX cairn_memories_by_operation ON cairn_memories (operation_id) WHERE operation_id IS NOT NULL',
    `CREATE TABLE cairn_chats (
  chat_id  text    PRIMARY KEY,
  revision integer NOT NULL,
  record   text
)`,
  ],
  // 8: sessions (cairn/sessions/postgres): one row a session, its revision moved by every turn, and one row a turn.
  [
    `CREATE TABLE cairn_sessions (
  session_id text             PRIMARY KEY,
  app_name   text             NOT NULL,
  user_id    text             NOT NULL,
  revision   integer          NOT NULL,
  created_at double precision NOT NULL,
  updated_at double precision NOT NULL
)`,
    'CREATE INDEX cairn_sessions_by_owner ON cairn_sessions (app_name, user_id, created_at, session_id)',
    `CREATE TABLE cairn_session_turns (
  session_id text    NOT NULL REFERENCES cairn_sessions (session_id) ON DELETE CASCADE,
  revision   integer NOT NULL,
  turn_id    text    NOT NULL,
  body       text    NOT NULL,
  PRIMARY KEY (session_id, revision),
  UNIQUE (session_id, turn_id)
)`,
  ],
  // 9: a step's saves write no TOAST rows and take no foreign-key locks. The head stays in its run's row (storage
  // MAIN, and a row is moved out of line only past 8,160 bytes): out of line, every save wrote the head's chunks
  // into the TOAST table and its index and deleted the last save's. The transcript and receipt rows no longer refer
  // to cairn_runs by a foreign key, whose check locked the run's row again at every save; a prune deletes them with
  // their run. Existing rows are left as they are (a TOASTed head moves in at its run's next save).
  [
    'ALTER TABLE cairn_run_messages DROP CONSTRAINT cairn_run_messages_run_id_fkey',
    'ALTER TABLE cairn_run_receipts DROP CONSTRAINT cairn_run_receipts_run_id_fkey',
    'ALTER TABLE cairn_runs ALTER COLUMN head SET STORAGE MAIN',
    'ALTER TABLE cairn_runs SET (toast_tuple_target = 8160)',
  ],
  // 10: a running run's save changes no column an index of cairn_runs reads, so PostgreSQL can write the new row
  // version on the same page with no new index entry (a heap-only tuple). PostgreSQL counts every column an index
  // reads, even in a partial index whose predicate leaves the row out, and the at-rest indexes of migration 6 read
  // updated_at, which every save changes: each save put a new entry in the primary key and the running index. They
  // now read rested_at: a run's updated_at while it is at rest, NULL while it runs (equal on every row they hold).
  // The column is added only if missing: the migration tests write older schemas with this code's saves, which
  // write it.
  [
    'ALTER TABLE cairn_runs ADD COLUMN IF NOT EXISTS rested_at double precision',
    "UPDATE cairn_runs SET rested_at = updated_at WHERE status <> 'running'",
    'DROP INDEX cairn_runs_at_rest_by_update',
    'DROP INDEX cairn_runs_at_rest_by_status',
    'DROP INDEX cairn_runs_at_rest_by_scope',
    "CREATE INDEX cairn_runs_at_rest_by_update ON cairn_runs (rested_at DESC, run_id DESC) WHERE status <> 'running'",
    "CREATE INDEX cairn_runs_at_rest_by_status ON cairn_runs (status, rested_at) WHERE status <> 'running'",
    "CREATE INDEX cairn_runs_at_rest_by_scope ON cairn_runs (scope, rested_at DESC, run_id DESC) WHERE status <> 'running'",
  ],
];

/** The schema version this code writes and reads. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** Creates the schema if needed and applies the missing migrations, all or none. */
export async function migrate(db: Db, tables: OpsTables): Promise<void> {
  await db.transaction(`Setting up the Cairn ops schema "${db.schema}"`, 'BEGIN ISOLATION LEVEL READ COMMITTED', async (client) => {
    // One setup per schema at a time, whichever process or pool runs it.
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`cairn_ops_schema:${db.schema}`]);
    // Checked first: CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege even when the schema exists.
    const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [db.schema]);
    if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${tables.schema}`);
    await client.query(`
      CREATE TABLE IF NOT EXISTS ${tables.version} (
        version integer PRIMARY KEY,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
    const { rows } = await client.query<{ version: number }>(`SELECT coalesce(max(version), 0) AS version FROM ${tables.version}`);
    const current = rows[0]!.version;
    if (current > SCHEMA_VERSION) throw new StoreSchemaVersionError(db.schema, current, SCHEMA_VERSION);
    if (current === SCHEMA_VERSION) return;
    // The migrations name their tables unqualified; for this transaction they land in the store's schema.
    await client.query(`SET LOCAL search_path TO ${tables.schema}`);
    for (let version = current + 1; version <= SCHEMA_VERSION; version += 1) {
      for (const statement of MIGRATIONS[version - 1]!) await client.query(statement);
      await client.query(`INSERT INTO ${tables.version} (version) VALUES ($1)`, [version]);
    }
  });
}

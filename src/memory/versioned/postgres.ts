/**
 * `createPostgresVersionedMemoryStore`: versioned memory in a PostgreSQL
 * schema (the ops store's, or another), in tables of its own
 * (postgres-schema.ts). A commit is one READ COMMITTED transaction that
 * first locks its scope's row (created on the scope's first commit), so
 * commits of one scope queue up and each reads the revision and the receipts
 * the one before it left: two commits racing both land, one revision apart,
 * and two commits of one operation id apply once (the second reads the first's
 * receipt and answers it, replayed). A forget takes the same lock.
 */
import type { PoolClient } from 'pg';
import { InvalidOptionsError } from '../../errors/index.js';
import { Db, quoteSchema, type PostgresConnection } from '../../stores/postgres/sql.js';
import {
  checkCommit, checkForget, checkIdRead, checkList, checkReceiptRead, checkScopeOf, checkSearch, copyReceipt,
  forgetRevisions, planCommit, rankVersioned, recordOfRow, replayOf, type CheckedCommit, type CheckedForget, type RevisionRow,
} from './checks.js';
import { migrateVersionedMemoryPostgres } from './postgres-schema.js';
import type {
  VersionedMemoryCommitResult, VersionedMemoryForgetEvent, VersionedMemoryReceipt, VersionedMemoryRecord, VersionedMemoryStore,
} from './types.js';

export type { PostgresConnection } from '../../stores/postgres/sql.js';

export interface PostgresVersionedMemoryStoreOptions {
  /** The schema that holds the tables (the ops store's, or one of their own). @default 'public' */
  schema?: string;
}

export interface PostgresVersionedMemoryStore extends VersionedMemoryStore {
  /** Creates the schema and the tables, or migrates them. Idempotent; concurrent calls are safe. Call before use. */
  setup(): Promise<void>;
  /** How many rows each versioned memory table holds now (for tests and operators). */
  rowCounts(): Promise<{ scopes: number; records: number; revisions: number; receipts: number; forgotten: number }>;
  readonly schema: string;
  /** Ends the pool if the store created it; a pool you passed stays open. */
  close(): Promise<void>;
}

const COLUMNS = 'v.scope_key, v.record_id, v.revision, v.text, v.origin, v.sources, v.status, v.operation_id, v.created_at, v.updated_at';

/**
 * @example
 * ```ts
 * const memory = createPostgresVersionedMemoryStore({ connectionString: process.env.DATABASE_URL! }, { schema: 'cairn' });
 * await memory.setup();
 * ```
 */
export function createPostgresVersionedMemoryStore(
  connection: PostgresConnection,
  options: PostgresVersionedMemoryStoreOptions = {},
): PostgresVersionedMemoryStore {
  if (options === null || typeof options !== 'object') throw new InvalidOptionsError('createPostgresVersionedMemoryStore: options must be an object.');
  const schema = options.schema ?? 'public';
  const q = quoteSchema(schema);
  const db = Db.open(connection, schema);
  const t = {
    scopes: `${q}.cairn_memory_v_scopes`, records: `${q}.cairn_memory_v_records`, revisions: `${q}.cairn_memory_v_revisions`,
    receipts: `${q}.cairn_memory_v_receipts`, forgotten: `${q}.cairn_memory_v_forgotten`,
  };
  const latestFrom = `FROM ${t.records} r JOIN ${t.revisions} v
  ON v.scope_key = r.scope_key AND v.record_id = r.record_id AND v.revision = r.latest_revision`;

  /** Locks the scope's row (made on its first commit) and answers its revision, or undefined when the scope has none and `create` is false. */
  const lockScope = async (client: PoolClient, key: string, create: boolean): Promise<number | undefined> => {
    if (create) await client.query(`INSERT INTO ${t.scopes} (scope_key, revision) VALUES ($1, 0) ON CONFLICT (scope_key) DO NOTHING`, [key]);
    const { rows } = await client.query<{ revision: number }>(`SELECT revision FROM ${t.scopes} WHERE scope_key = $1 FOR UPDATE`, [key]);
    return rows[0]?.revision;
  };

  const commitIn = async (client: PoolClient, commit: CheckedCommit): Promise<VersionedMemoryCommitResult> => {
    const revision = (await lockScope(client, commit.key, true))!;
    const stored = await client.query<{ body: string }>(`SELECT body FROM ${t.receipts} WHERE scope_key = $1 AND operation_id = $2`,
      [commit.key, commit.operationId]);
    if (stored.rows[0]) return replayOf(JSON.parse(stored.rows[0].body) as VersionedMemoryReceipt, commit);
    const latest = new Map<string, VersionedMemoryRecord>();
    if (commit.mutations.length > 0) {
      const { rows } = await client.query<RevisionRow>(`SELECT ${COLUMNS} ${latestFrom} WHERE r.scope_key = $1 AND r.record_id = ANY($2::text[])`,
        [commit.key, commit.mutations.map((m) => m.id)]);
      for (const row of rows) latest.set(row.record_id, recordOfRow(row));
    }
    const plan = planCommit(commit, revision, latest);
    const added = plan.writes.map((w, position) => ({ ...w, position })).filter((w) => w.op === 'add');
    const changed = plan.writes.filter((w) => w.op !== 'add');
    if (added.length > 0) {
      await client.query(`INSERT INTO ${t.records} (scope_key, record_id, first_revision, position, latest_revision, status)
  SELECT $1, a.record_id, $2, a.position, $2, 'active' FROM unnest($3::text[], $4::int[]) AS a(record_id, position)`,
      [commit.key, plan.scopeRevision, added.map((w) => w.record.id), added.map((w) => w.position)]);
    }
    if (changed.length > 0) {
      await client.query(`UPDATE ${t.records} r SET latest_revision = $2, status = c.status
  FROM unnest($3::text[], $4::text[]) AS c(record_id, status) WHERE r.scope_key = $1 AND r.record_id = c.record_id`,
      [commit.key, plan.scopeRevision, changed.map((w) => w.record.id), changed.map((w) => w.record.status)]);
    }
    if (plan.writes.length > 0) {
      const rs = plan.writes.map((w) => w.record);
      await client.query(`INSERT INTO ${t.revisions} (scope_key, record_id, revision, text, origin, sources, status, operation_id, created_at, updated_at)
  SELECT $1, w.record_id, $2, w.text, w.origin, w.sources, w.status, $3, w.created_at, $4
  FROM unnest($5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::float8[]) AS w(record_id, text, origin, sources, status, created_at)`,
      [commit.key, plan.scopeRevision, commit.operationId, commit.at, rs.map((r) => r.id), rs.map((r) => r.text), rs.map((r) => r.origin),
        rs.map((r) => JSON.stringify(r.sources)), rs.map((r) => r.status), rs.map((r) => r.createdAt)]);
    }
    await client.query(`UPDATE ${t.scopes} SET revision = $2 WHERE scope_key = $1`, [commit.key, plan.scopeRevision]);
    await client.query(`INSERT INTO ${t.receipts} (scope_key, operation_id, request_digest, body) VALUES ($1, $2, $3, $4)`,
      [commit.key, commit.operationId, commit.requestDigest, JSON.stringify(plan.receipt)]);
    return { receipt: copyReceipt(plan.receipt), replayed: false };
  };

  const forgetIn = async (client: PoolClient, forget: CheckedForget): Promise<VersionedMemoryForgetEvent> => {
    const locked = await lockScope(client, forget.key, false);
    const place = locked === undefined ? undefined : (await client.query<{ latest_revision: number }>(
      `SELECT latest_revision FROM ${t.records} WHERE scope_key = $1 AND record_id = $2`, [forget.key, forget.id])).rows[0];
    const held = place ? (await client.query<{ revision: number }>(
      `SELECT revision FROM ${t.revisions} WHERE scope_key = $1 AND record_id = $2 ORDER BY revision`, [forget.key, forget.id])).rows.map((r) => r.revision) : [];
    const taken = forgetRevisions(forget, held);
    await client.query(`UPDATE ${t.revisions} SET text = NULL, status = 'forgotten' WHERE scope_key = $1 AND record_id = $2 AND revision = ANY($3::int[])`,
      [forget.key, forget.id, taken]);
    await client.query(`INSERT INTO ${t.forgotten} (scope_key, record_id, revision, forgotten_at)
  SELECT $1, $2, r.revision, $4 FROM unnest($3::int[]) WITH ORDINALITY AS r(revision, n) ORDER BY r.n ON CONFLICT DO NOTHING`,
    [forget.key, forget.id, taken, forget.at]);
    if (taken.includes(place!.latest_revision)) {
      await client.query(`UPDATE ${t.records} SET status = 'forgotten' WHERE scope_key = $1 AND record_id = $2`, [forget.key, forget.id]);
    }
    return { scope: { ...forget.scope }, records: taken.map((revision) => ({ recordId: forget.id, revision })), forgottenAt: forget.at };
  };

  return {
    schema,
    async setup() {
      await migrateVersionedMemoryPostgres(db, q);
    },
    async close() {
      await db.close();
    },

    async commit(input) {
      const commit = checkCommit(input);
      return db.transaction('Committing versioned memory', 'BEGIN ISOLATION LEVEL READ COMMITTED', (client) => commitIn(client, commit));
    },

    async receipt(input) {
      const read = checkReceiptRead(input);
      const [row] = await db.query<{ body: string }>('Reading a versioned memory receipt',
        `SELECT body FROM ${t.receipts} WHERE scope_key = $1 AND operation_id = $2`, [read.key, read.operationId]);
      return row ? JSON.parse(row.body) as VersionedMemoryReceipt : undefined;
    },

    async get(input) {
      const read = checkIdRead(input, 'get');
      const [row] = await db.query<RevisionRow>('Reading a versioned memory record',
        `SELECT ${COLUMNS} ${latestFrom} WHERE r.scope_key = $1 AND r.record_id = $2`, [read.key, read.id]);
      return row ? recordOfRow(row) : undefined;
    },

    async history(input) {
      const read = checkIdRead(input, 'history');
      return (await db.query<RevisionRow>('Reading a versioned memory history',
        `SELECT ${COLUMNS} FROM ${t.revisions} v WHERE v.scope_key = $1 AND v.record_id = $2 ORDER BY v.revision`, [read.key, read.id])).map(recordOfRow);
    },

    async list(input) {
      const read = checkList(input);
      return (await db.query<RevisionRow>('Listing versioned memory records', `SELECT ${COLUMNS} ${latestFrom} WHERE r.scope_key = $1
  AND (r.status = 'active' OR (r.status = 'retracted' AND $2) OR (r.status = 'forgotten' AND $3))
  ORDER BY r.first_revision, r.position LIMIT $4`, [read.key, read.includeRetracted, read.includeForgotten, read.limit ?? null])).map(recordOfRow);
    },

    async search(input) {
      const read = checkSearch(input);
      const rows = await db.query<RevisionRow>('Searching versioned memory',
        `SELECT ${COLUMNS} ${latestFrom} WHERE r.scope_key = $1 AND r.status = 'active' ORDER BY r.first_revision, r.position`, [read.key]);
      return rankVersioned(rows.map(recordOfRow), read.text, read.limit);
    },

    async scopeRevision(input) {
      const { key } = checkScopeOf(input, 'scopeRevision');
      const [row] = await db.query<{ revision: number }>('Reading a memory scope revision', `SELECT revision FROM ${t.scopes} WHERE scope_key = $1`, [key]);
      return row?.revision ?? 0;
    },

    async forget(input) {
      const forget = checkForget(input);
      return db.transaction('Forgetting a versioned memory record', 'BEGIN ISOLATION LEVEL READ COMMITTED', (client) => forgetIn(client, forget));
    },

    async forgotten(input) {
      const { key } = checkScopeOf(input, 'forgotten');
      const rows = await db.query<{ record_id: string; revision: number; forgotten_at: number }>('Reading forget records',
        `SELECT record_id, revision, forgotten_at FROM ${t.forgotten} WHERE scope_key = $1 ORDER BY seq`, [key]);
      return rows.map((r) => ({ recordId: r.record_id, revision: r.revision, forgottenAt: r.forgotten_at }));
    },

    async rowCounts() {
      const [row] = await db.query<Record<'scopes' | 'records' | 'revisions' | 'receipts' | 'forgotten', number>>('Counting versioned memory rows',
        `SELECT (SELECT count(*)::int FROM ${t.scopes}) AS scopes, (SELECT count(*)::int FROM ${t.records}) AS records,
  (SELECT count(*)::int FROM ${t.revisions}) AS revisions, (SELECT count(*)::int FROM ${t.receipts}) AS receipts,
  (SELECT count(*)::int FROM ${t.forgotten}) AS forgotten`);
      return { ...row! };
    },
  };
}

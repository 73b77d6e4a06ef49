/**
 * The PostgreSQL swarm store: the SQLite store's four tables in a schema of
 * your choice, with their own schema-version table
 * (`cairn_swarm_schema_version`), apart from the ops store's migrations.
 * Call `setup()` once (it is idempotent). A step's record, task states and
 * journal events are one transaction that first locks the swarm's row, so
 * journal numbers never interleave between two writers.
 */
import pg from 'pg';
import type { Pool, PoolClient } from 'pg';
import { CairnError, InvalidOptionsError, PersistenceError, RevisionConflictError } from '../../errors/index.js';
import type { AgentRunEnvelope, AgentRunStore } from '../../agent/types.js';
import {
  checkEnvelopeArg, checkEvents, checkId, checkJournalRange, checkRecord, checkWrite, conflict, scopeMismatch,
} from '../store-kit.js';
import type { BlackboardEntry, BlackboardWrite, SwarmJournalEvent, SwarmJournalEventInput, SwarmRecord, SwarmStore } from '../types.js';

export const SWARM_POSTGRES_SCHEMA_VERSION = 1;

const watched = new WeakSet<object>();

export interface PostgresSwarmStoreOptions {
  /** e.g. `postgres://user@host:5432/db`; the store creates a pool and `close()` ends it. */
  connectionString?: string;
  /** A pg Pool of yours instead; `close()` leaves it open. */
  pool?: unknown;
  /** The schema that holds the tables. @default 'public' */
  schema?: string;
  /** pg Pool settings for the pool the store creates. */
  poolOptions?: Record<string, unknown>;
}

export interface PostgresSwarmStore extends SwarmStore {
  /** Creates the schema and tables if missing; refuses a newer schema version. */
  setup(): Promise<void>;
  close(): Promise<void>;
}

interface BoardRow { key: string; value: unknown; task_id: string; write_id: string; version: number; at: string }
const entryOf = (r: BoardRow): BlackboardEntry => ({ key: r.key, value: r.value as BlackboardEntry['value'], taskId: r.task_id, writeId: r.write_id, version: Number(r.version), at: Number(r.at) });

/**
 * @example
 * ```ts
 * const store = createPostgresSwarmStore({ connectionString: process.env.DATABASE_URL, schema: 'agents' });
 * await store.setup();
 * await runAgentGroup({ session: { store, swarmId: 's1', scope: 'tenant-a' }, tasks });
 * await store.close();
 * ```
 */
export function createPostgresSwarmStore(options: PostgresSwarmStoreOptions): PostgresSwarmStore {
  const schema = options?.schema ?? 'public';
  if (typeof schema !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) throw new InvalidOptionsError('schema must be a plain SQL identifier.');
  let pool: Pool;
  let owned = false;
  if (options?.pool) pool = options.pool as Pool;
  else {
    if (typeof options?.connectionString !== 'string' || options.connectionString === '') throw new InvalidOptionsError('createPostgresSwarmStore needs { connectionString } or { pool }.');
    pool = new pg.Pool({ ...(options.poolOptions ?? {}), connectionString: options.connectionString });
    pool.on('error', () => undefined);
    owned = true;
  }
  const q = `"${schema}"`;
  const t = (name: string) => `${q}.${name}`;

  async function tx<R>(what: string, body: (c: PoolClient) => Promise<R>): Promise<R> {
    let client: PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw fail(what, error);
    }
    // pg emits 'error' on a checked-out client whose connection dies; one listener per client, not one per checkout.
    if (!watched.has(client)) {
      watched.add(client);
      client.on('error', () => undefined);
    }
    try {
      await client.query('BEGIN');
      const out = await body(client);
      await client.query('COMMIT');
      return out;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw fail(what, error);
    } finally {
      client.release();
    }
  }
  async function one<R>(what: string, text: string, values: unknown[]): Promise<R[]> {
    try {
      return (await pool.query(text, values)).rows as R[];
    } catch (error) {
      throw fail(what, error);
    }
  }

  const runs: AgentRunStore = {
    async load(runId, opts) {
      const rows = await one<{ scope: string; envelope: AgentRunEnvelope | null }>('load', `SELECT scope, envelope FROM ${t('cairn_swarm_tasks')} WHERE run_id = $1`, [runId]);
      const row = rows[0];
      if (!row || row.envelope === null) return undefined;
      if (opts?.scope !== undefined && opts.scope !== row.scope) throw scopeMismatch(runId);
      return row.envelope;
    },
    async save(envelope) {
      checkEnvelopeArg(envelope);
      await tx('save', async (c) => {
        const row = (await c.query(`SELECT scope, run_revision, envelope IS NULL AS empty FROM ${t('cairn_swarm_tasks')} WHERE run_id = $1 FOR UPDATE`, [envelope.runId])).rows[0];
        if (!row) throw new PersistenceError(`Run ${envelope.runId} is not a task of a swarm in this store; a swarm's store keeps its tasks' runs only.`);
        if (row.scope !== envelope.scope) throw scopeMismatch(envelope.runId);
        const stored = Number(row.run_revision);
        if (envelope.revision !== stored + 1) throw new RevisionConflictError(envelope.runId, envelope.revision - 1, row.empty ? null : stored);
        await c.query(`UPDATE ${t('cairn_swarm_tasks')} SET envelope = $1, run_revision = $2, run_status = $3 WHERE run_id = $4`,
          [JSON.stringify(envelope), envelope.revision, envelope.status, envelope.runId]);
      });
    },
  };

  return {
    runs,
    async setup() {
      await tx('setup', async (c) => {
        await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`cairn-swarm-setup:${schema}`]);
        await c.query(`CREATE SCHEMA IF NOT EXISTS ${q}`);
        await c.query(`CREATE TABLE IF NOT EXISTS ${t('cairn_swarm_schema_version')} (version INTEGER NOT NULL)`);
        const found = (await c.query(`SELECT version FROM ${t('cairn_swarm_schema_version')}`)).rows[0];
        if (found && Number(found.version) > SWARM_POSTGRES_SCHEMA_VERSION) {
          throw new CairnError('record_version_unsupported', `The swarm tables in ${schema} are at schema version ${found.version}; this code knows ${SWARM_POSTGRES_SCHEMA_VERSION}. Nothing was changed.`, { fault: 'user' });
        }
        await c.query(`CREATE TABLE IF NOT EXISTS ${t('cairn_swarms')} (swarm_id TEXT PRIMARY KEY, scope TEXT NOT NULL, revision INTEGER NOT NULL,
          status TEXT NOT NULL, journal_head BIGINT NOT NULL DEFAULT 0, record JSONB NOT NULL, updated_at BIGINT NOT NULL)`);
        await c.query(`CREATE TABLE IF NOT EXISTS ${t('cairn_swarm_tasks')} (run_id TEXT PRIMARY KEY, swarm_id TEXT NOT NULL, task_id TEXT NOT NULL,
          scope TEXT NOT NULL, status TEXT NOT NULL, run_revision INTEGER NOT NULL DEFAULT 0, run_status TEXT, envelope JSONB, UNIQUE (swarm_id, task_id))`);
        await c.query(`CREATE TABLE IF NOT EXISTS ${t('cairn_swarm_journal')} (swarm_id TEXT NOT NULL, seq BIGINT NOT NULL, type TEXT NOT NULL,
          task_id TEXT, data JSONB, at BIGINT NOT NULL, PRIMARY KEY (swarm_id, seq))`);
        await c.query(`CREATE TABLE IF NOT EXISTS ${t('cairn_swarm_blackboard')} (swarm_id TEXT NOT NULL, write_id TEXT NOT NULL, key TEXT NOT NULL,
          value JSONB NOT NULL, task_id TEXT NOT NULL, version INTEGER NOT NULL, at BIGINT NOT NULL, PRIMARY KEY (swarm_id, write_id), UNIQUE (swarm_id, key, version))`);
        if (!found) await c.query(`INSERT INTO ${t('cairn_swarm_schema_version')} (version) VALUES ($1)`, [SWARM_POSTGRES_SCHEMA_VERSION]);
      });
    },
    async loadSwarm(swarmId, opts) {
      checkId(swarmId, 'swarmId');
      const row = (await one<{ scope: string; record: SwarmRecord }>('loadSwarm', `SELECT scope, record FROM ${t('cairn_swarms')} WHERE swarm_id = $1`, [swarmId]))[0];
      if (!row) return undefined;
      if (row.scope !== opts?.scope) throw scopeMismatch(swarmId);
      return row.record;
    },
    async saveSwarm(record, events) {
      checkRecord(record);
      checkEvents(events);
      return tx('saveSwarm', async (c) => {
        const row = (await c.query(`SELECT scope, revision, journal_head FROM ${t('cairn_swarms')} WHERE swarm_id = $1 FOR UPDATE`, [record.swarmId])).rows[0];
        if (row && row.scope !== record.scope) throw scopeMismatch(record.swarmId);
        const stored = row ? Number(row.revision) : 0;
        if (record.revision !== stored + 1) throw conflict(record.swarmId, record, row ? stored : null);
        const head = row ? Number(row.journal_head) : 0;
        if (row) {
          await c.query(`UPDATE ${t('cairn_swarms')} SET revision = $1, status = $2, record = $3, updated_at = $4, journal_head = $5 WHERE swarm_id = $6`,
            [record.revision, record.status, JSON.stringify(record), record.updatedAt, head + events.length, record.swarmId]);
        } else {
          const inserted = await c.query(`INSERT INTO ${t('cairn_swarms')} (swarm_id, scope, revision, status, record, updated_at, journal_head)
            VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (swarm_id) DO NOTHING`,
          [record.swarmId, record.scope, record.revision, record.status, JSON.stringify(record), record.updatedAt, events.length]);
          if (inserted.rowCount !== 1) throw conflict(record.swarmId, record, 1);
        }
        for (const [taskId, task] of Object.entries(record.tasks)) {
          const done = await c.query(`INSERT INTO ${t('cairn_swarm_tasks')} (run_id, swarm_id, task_id, scope, status) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (run_id) DO UPDATE SET status = excluded.status WHERE ${t('cairn_swarm_tasks')}.swarm_id = excluded.swarm_id`,
          [task.runId, record.swarmId, taskId, record.scope, task.status]);
          if (done.rowCount !== 1) throw new PersistenceError(`Run ${task.runId} belongs to another swarm.`);
        }
        const appended: SwarmJournalEvent[] = events.map((e: SwarmJournalEventInput, i) => ({ ...e, swarmId: record.swarmId, seq: head + i + 1, at: record.updatedAt }));
        for (const e of appended) {
          await c.query(`INSERT INTO ${t('cairn_swarm_journal')} (swarm_id, seq, type, task_id, data, at) VALUES ($1, $2, $3, $4, $5, $6)`,
            [e.swarmId, e.seq, e.type, e.taskId ?? null, e.data === undefined ? null : JSON.stringify(e.data), e.at]);
        }
        return appended;
      });
    },
    async readJournal(swarmId, opts) {
      checkId(swarmId, 'swarmId');
      const { after, limit } = checkJournalRange(opts);
      const rows = await one<{ seq: string; type: string; task_id: string | null; data: unknown; at: string }>('readJournal',
        `SELECT seq, type, task_id, data, at FROM ${t('cairn_swarm_journal')} WHERE swarm_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, [swarmId, after, limit]);
      return rows.map((r) => ({
        swarmId, seq: Number(r.seq), type: r.type as SwarmJournalEvent['type'], at: Number(r.at),
        ...(r.task_id !== null ? { taskId: r.task_id } : {}), ...(r.data !== null ? { data: r.data as SwarmJournalEvent['data'] } : {}),
      }));
    },
    async writeBlackboard(swarmId, write: BlackboardWrite) {
      checkId(swarmId, 'swarmId');
      checkWrite(write);
      return tx('writeBlackboard', async (c) => {
        // The swarm's row lock orders this write's version and journal number with every other write of the swarm.
        const head = (await c.query(`UPDATE ${t('cairn_swarms')} SET journal_head = journal_head + 1 WHERE swarm_id = $1 RETURNING journal_head`, [swarmId])).rows[0];
        if (!head) throw new PersistenceError(`No swarm ${swarmId} in this store: a blackboard belongs to a saved swarm.`);
        const done = (await c.query(`SELECT key, value, task_id, write_id, version, at FROM ${t('cairn_swarm_blackboard')} WHERE swarm_id = $1 AND write_id = $2`, [swarmId, write.writeId])).rows[0] as BoardRow | undefined;
        if (done) {
          await c.query('ROLLBACK');
          await c.query('BEGIN');
          return { applied: false, entry: entryOf(done) };
        }
        const latest = (await c.query(`SELECT COALESCE(MAX(version), 0) AS v FROM ${t('cairn_swarm_blackboard')} WHERE swarm_id = $1 AND key = $2`, [swarmId, write.key])).rows[0];
        const version = Number(latest.v) + 1;
        await c.query(`INSERT INTO ${t('cairn_swarm_blackboard')} (swarm_id, write_id, key, value, task_id, version, at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
          [swarmId, write.writeId, write.key, JSON.stringify(write.value), write.taskId, version, write.at]);
        await c.query(`INSERT INTO ${t('cairn_swarm_journal')} (swarm_id, seq, type, task_id, data, at) VALUES ($1, $2, 'blackboard-written', $3, $4, $5)`,
          [swarmId, Number(head.journal_head), write.taskId, JSON.stringify({ key: write.key, version, writeId: write.writeId }), write.at]);
        return { applied: true, entry: { key: write.key, value: JSON.parse(JSON.stringify(write.value)), taskId: write.taskId, writeId: write.writeId, version, at: write.at } };
      });
    },
    async readBlackboard(swarmId, key) {
      checkId(swarmId, 'swarmId');
      const rows = await one<BoardRow>('readBlackboard', `SELECT DISTINCT ON (key) key, value, task_id, write_id, version, at FROM ${t('cairn_swarm_blackboard')}
        WHERE swarm_id = $1 AND ($2::text IS NULL OR key = $2) ORDER BY key, version DESC`, [swarmId, key ?? null]);
      return rows.map(entryOf).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    },
    async close() {
      if (owned) await pool.end();
    },
  };
}

function fail(what: string, error: unknown): CairnError {
  if (CairnError.isInstance(error)) return error;
  return new PersistenceError(`The PostgreSQL swarm store's ${what} failed: ${error instanceof Error ? error.message : String(error)}`, error);
}

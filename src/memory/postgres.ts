/**
 * The memory store in the PostgreSQL ops schema (`cairn_memories`, created by
 * the ops store's `setup()`). A write locks its scope (a transaction-scoped
 * advisory lock) before it reads, so concurrent writers on any machine never
 * store one text twice in a scope.
 */
import type { PoolClient } from 'pg';
import { Db, quoteSchema, type PostgresConnection } from '../stores/postgres/sql.js';
import {
  checkAdd, checkIdInput, checkList, checkSearch, checkSweep, checkUpdate, decideAdd, decideUpdate,
} from './records.js';
import { fromRow, MEMORY_COLUMNS, rowValues, scopeWhere, type MemoryRow } from './rows.js';
import { memoryScopeKey, memoryScopeMatches } from './scope.js';
import { rankMemories } from './search.js';
import type { MemoryRecord, MemoryScope, MemoryStore } from './types.js';

export interface PostgresMemoryStoreOptions {
  /** The schema of the ops store whose `setup()` created the tables. @default 'public' */
  schema?: string;
}

/** A MemoryStore on PostgreSQL, with the pool it owns. */
export interface PostgresMemoryStore extends MemoryStore {
  /** Ends the pool if the store created it (from a connection string); a pool you passed stays open. */
  close(): Promise<void>;
}

/**
 * The memory store in the schema of a PostgreSQL ops store: pass it as
 * `memory.seams.store`. Run the ops store's `setup()` first; pass the same
 * `{ pool }` to share connections with it.
 *
 * @example
 * ```ts
 * const ops = createPostgresOpsStore({ pool });
 * await ops.setup();
 * const memories = createPostgresMemoryStore({ pool });
 * ```
 */
export function createPostgresMemoryStore(connection: PostgresConnection, options: PostgresMemoryStoreOptions = {}): PostgresMemoryStore {
  const schema = options.schema ?? 'public';
  const table = `${quoteSchema(schema)}.cairn_memories`;
  const db = Db.open(connection, schema);
  const insert = `INSERT INTO ${table} (${MEMORY_COLUMNS.join(', ')}) VALUES (${MEMORY_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})`;
  const replace = `UPDATE ${table} SET ${MEMORY_COLUMNS.slice(1).map((c, i) => `${c} = $${i + 1}`).join(', ')} WHERE id = $${MEMORY_COLUMNS.length}`;
  const param = (i: number) => `$${i}`;

  const select = async (what: string, scope: MemoryScope, extra = '', extraValues: unknown[] = []): Promise<MemoryRecord[]> => {
    const where = scopeWhere(scope, param);
    const extraSql = extra.replace(/\$\?/g, () => `$${where.values.length + 1}`);
    const rows = await db.query<MemoryRow>(what, `SELECT * FROM ${table} WHERE ${where.sql}${extraSql} ORDER BY created_at, id`, [...where.values, ...extraValues]);
    return rows.map(fromRow);
  };

  /** One write under its scope's lock. */
  const write = <T>(what: string, scope: MemoryScope, body: (client: PoolClient) => Promise<T>) =>
    db.transaction(what, 'BEGIN ISOLATION LEVEL READ COMMITTED', async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`cairn_memories:${schema}:${memoryScopeKey(scope)}`]);
      return body(client);
    });
  const one = async (client: PoolClient, sql: string, values: unknown[]) =>
    ((await client.query<MemoryRow>(sql, values)).rows[0]);
  const replaceRow = (client: PoolClient, record: MemoryRecord) => client.query(replace, [...rowValues(record).slice(1), record.id]);

  return {
    async add(input) {
      const { record } = checkAdd(input);
      return write('Adding a memory', record.scope, async (client) => {
        const byHash = await one(client, `SELECT * FROM ${table} WHERE scope_key = $1 AND hash = $2`, [memoryScopeKey(record.scope), record.hash]);
        const byId = await one(client, `SELECT * FROM ${table} WHERE id = $1`, [record.id]);
        const decision = decideAdd(record, byHash && fromRow(byHash), byId && fromRow(byId));
        if (decision.kind === 'insert') await client.query(insert, rowValues(decision.record));
        else await replaceRow(client, decision.record);
        return { record: decision.record, deduplicated: decision.kind === 'refresh' };
      });
    },
    async update(input) {
      const update = checkUpdate(input);
      // The target's exact scope is known only once it is read: lock the update's scope, then the target's.
      return write('Updating a memory', update.scope, async (client) => {
        const row = await one(client, `SELECT * FROM ${table} WHERE id = $1 FOR UPDATE`, [update.id]);
        const target = row && fromRow(row);
        if (!target || !memoryScopeMatches(update.scope, target.scope)) return undefined;
        const key = memoryScopeKey(target.scope);
        if (key !== memoryScopeKey(update.scope)) {
          await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`cairn_memories:${schema}:${key}`]);
        }
        const other = await one(client, `SELECT * FROM ${table} WHERE scope_key = $1 AND hash = $2`, [key, update.hash]);
        const decision = decideUpdate(update, target, other && fromRow(other));
        if (decision.kind === 'fold') await client.query(`DELETE FROM ${table} WHERE id = $1`, [decision.deleteId]);
        await replaceRow(client, decision.record);
        return { record: decision.record, deduplicated: decision.kind === 'fold' };
      });
    },
    async delete(input) {
      const { id, scope } = checkIdInput(input, 'delete');
      const where = scopeWhere(scope, param, 2);
      const rows = await db.query('Deleting a memory', `DELETE FROM ${table} WHERE id = $1 AND ${where.sql} RETURNING id`, [id, ...where.values], true);
      return rows.length > 0;
    },
    async get(input) {
      const { id, scope } = checkIdInput(input, 'get');
      return (await select('Reading a memory', scope, ' AND id = $?', [id]))[0];
    },
    async list(input) {
      const { scope, operationId, limit } = checkList(input);
      const found = operationId === undefined
        ? await select('Listing memories', scope)
        : await select('Listing memories', scope, ' AND operation_id = $?', [operationId]);
      return limit === undefined ? found : found.slice(0, limit);
    },
    async search(input) {
      const search = checkSearch(input);
      return rankMemories(await select('Searching memories', search.scope), search);
    },
    async sweep(input) {
      const { scope, now } = checkSweep(input);
      const where = scopeWhere(scope, param);
      const rows = await db.query('Sweeping memories',
        `DELETE FROM ${table} WHERE ${where.sql} AND expires_at IS NOT NULL AND expires_at <= $${where.values.length + 1} RETURNING id`,
        [...where.values, now], true);
      return rows.length;
    },
    close: () => db.close(),
  };
}

/**
 * The memory store in the PostgreSQL ops schema (`cairn_memories`, created by
 * the ops store's `setup()`), reached as `ops.memories`. A write locks the
 * record's exact scope (a transaction-scoped advisory lock) before it reads,
 * so concurrent writers on any machine never store one text twice in a scope
 * (the unique index on scope and hash is the backstop).
 */
import type { PoolClient } from 'pg';
import { quoteSchema, type Db } from '../stores/postgres/sql.js';
import {
  checkAdd, checkIdInput, checkList, checkSearch, checkSweep, checkUpdate, decideAdd, decideUpdate,
} from './records.js';
import { fromRow, MEMORY_COLUMNS, rowValues, scopeWhere, type MemoryRow } from './rows.js';
import { memoryScopeKey, memoryScopeMatches } from './scope.js';
import { rankMemories } from './search.js';
import type { MemoryRecord, MemoryScope, MemoryStore } from './types.js';

/**
 * The memory store of a PostgreSQL ops store (`ops.memories`), on the ops
 * store's pool and schema.
 * @internal Takes the ops store's connection, whose pg types stay out of the published declarations.
 */
export function createPostgresMemoryStore(db: Db): MemoryStore {
  const schema = db.schema;
  const table = `${quoteSchema(schema)}.cairn_memories`;
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
      // A record's scope never changes: read it to learn which scope to lock, then read it again under the lock.
      const [found] = await db.query<MemoryRow>('Updating a memory', `SELECT * FROM ${table} WHERE id = $1`, [update.id]);
      const seen = found && fromRow(found);
      if (!seen || !memoryScopeMatches(update.scope, seen.scope)) return undefined;
      return write('Updating a memory', seen.scope, async (client) => {
        const row = await one(client, `SELECT * FROM ${table} WHERE id = $1`, [update.id]);
        const target = row && fromRow(row);
        if (!target) return undefined;
        const other = await one(client, `SELECT * FROM ${table} WHERE scope_key = $1 AND hash = $2`, [memoryScopeKey(target.scope), update.hash]);
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
  };
}

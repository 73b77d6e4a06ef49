/**
 * The store's connection: a pg Pool (its own or the caller's), transactions
 * on one checked-out client, and every driver failure turned into a typed
 * PersistenceError that keeps the driver's error as its cause.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Pool, PoolClient, PoolConfig } from 'pg';
import { CairnError, InvalidOptionsError, PersistenceError } from '../../errors/index.js';

/**
 * The part of a pg `Pool` the store calls: a `pg.Pool` fits it. Declared here,
 * not taken from pg, so that Cairn's published types need no @types/pg.
 */
export interface PostgresPool {
  connect(): Promise<unknown>;
  end(): Promise<void>;
}

/**
 * Settings for the pool the store creates, passed on to `pg.Pool` as given
 * (any pg `PoolConfig` field). The common ones are named for their types;
 * they are not checked here, pg reads them.
 */
export interface PostgresPoolOptions {
  max?: number;
  min?: number;
  idleTimeoutMillis?: number;
  connectionTimeoutMillis?: number;
  ssl?: boolean | object;
  application_name?: string;
  [setting: string]: unknown;
}

/** Where the store connects: a connection string (the store creates and owns a pool) or a pool you own. */
export type PostgresConnection =
  | {
      /** e.g. `postgres://user@host:5432/db`. The store creates a pool and `close()` ends it. */
      connectionString: string;
      /** Further pg Pool settings for the pool the store creates (`max`, `ssl`, `idleTimeoutMillis`, ...). */
      poolOptions?: PostgresPoolOptions;
      pool?: undefined;
    }
  | {
      /** A pg Pool you created; `close()` leaves it open. Attach `pool.on('error', ...)` as pg requires. */
      pool: PostgresPool;
      connectionString?: undefined;
    };

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Checks a schema name and returns it quoted for SQL. Only plain identifiers are accepted. */
export function quoteSchema(schema: string): string {
  if (typeof schema !== 'string' || !IDENTIFIER.test(schema)) {
    throw new InvalidOptionsError(`schema must be a plain SQL identifier (letters, digits, _; at most 63), got ${JSON.stringify(schema)}.`);
  }
  return `"${schema}"`;
}

// Clients that already carry our error listener.
const watched = new WeakSet<PoolClient>();

/**
 * pg emits 'error' on a checked-out client whose connection dies (a restart,
 * pg_terminate_backend); without a listener that event would end the process.
 * The failure also rejects the query in flight, which is where we handle it.
 */
function watch(client: PoolClient): void {
  if (watched.has(client)) return;
  watched.add(client);
  client.on('error', () => undefined);
}

function pgCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Marks an error that happened while COMMIT was in flight: the write may or may not have landed. */
class CommitUnknown extends Error {
  constructor(readonly inner: unknown) {
    super('commit outcome unknown');
  }
}

export class Db {
  private closed = false;
  /** @internal pg's types stay out of the published declarations (they need no @types/pg). */
  readonly pool: Pool;
  private readonly owned: boolean;
  readonly schema: string;

  /** @internal As {@link Db.pool}. */
  constructor(pool: Pool, owned: boolean, schema: string) {
    this.pool = pool;
    this.owned = owned;
    this.schema = schema;
  }

  static open(connection: PostgresConnection, schema: string): Db {
    // A pool the caller passed is a pg Pool; its type here is only the part the store calls.
    if (connection && 'pool' in connection && connection.pool) return new Db(connection.pool as Pool, false, schema);
    const connectionString = (connection as { connectionString?: unknown } | undefined)?.connectionString;
    if (typeof connectionString !== 'string' || connectionString === '') {
      throw new InvalidOptionsError('createPostgresOpsStore needs { connectionString } or { pool }.');
    }
    const pool = new pg.Pool({ ...(connection as { poolOptions?: PoolConfig }).poolOptions, connectionString });
    // An idle client whose connection dies is dropped by the pool; the next checkout opens a new one.
    pool.on('error', () => undefined);
    return new Db(pool, true, schema);
  }

  /** A typed error for a failure of `what`, keeping the driver's error as the cause. */
  fail(what: string, error: unknown): CairnError {
    if (CairnError.isInstance(error)) return error;
    if (error instanceof CommitUnknown) {
      return new PersistenceError(
        `${what} failed as it committed; the write may or may not have been applied: ${messageOf(error.inner)}`,
        error.inner,
      );
    }
    const code = pgCode(error);
    if (code === '42P01' || code === '3F000') {
      return new PersistenceError(
        `${what} failed: schema "${this.schema}" has no Cairn tables. Call setup() first. (${messageOf(error)})`,
        error,
      );
    }
    return new PersistenceError(`${what} failed: ${messageOf(error)}`, error);
  }

  /**
   * One statement, outside a transaction (atomic on its own). For a `write`,
   * a connection lost while the statement ran leaves its outcome unknown, and
   * the error says so. With a `name` (see {@link statementName}), each
   * connection prepares the statement once and then only binds and runs it.
   * With `arrays`, each row comes as an array of its values in column order
   * (pg's rowMode 'array'), not an object pg builds with a key per column.
   */
  async query<R extends object>(what: string, text: string, values: unknown[] = [], write = false, name?: string, arrays = false): Promise<R[]> {
    const client = await this.connect(what);
    let broken: Error | undefined;
    try {
      const config = name ? { name, text, values } : { text, values };
      const result = arrays ? await client.query({ ...config, rowMode: 'array' as const }) : await client.query(config);
      return result.rows as R[];
    } catch (error) {
      if (!lostConnection(error)) throw this.fail(what, error);
      broken = toError(error);
      throw this.fail(what, write ? new CommitUnknown(error) : error);
    } finally {
      client.release(broken);
    }
  }

  private async connect(what: string): Promise<PoolClient> {
    try {
      const client = await this.pool.connect();
      watch(client);
      return client;
    } catch (error) {
      throw this.fail(what, error);
    }
  }

  /**
   * Runs `body` in one transaction on one client. Any failure rolls back; a
   * client whose connection failed is dropped from the pool, not reused.
   * @internal As {@link Db.pool}.
   */
  async transaction<T>(what: string, begin: string, body: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.connect(what);
    let broken: Error | undefined;
    try {
      await client.query(begin);
      let result: T;
      try {
        result = await body(client);
      } catch (error) {
        await client.query('ROLLBACK').catch((rollbackError: unknown) => {
          broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
        });
        throw error;
      }
      try {
        await client.query('COMMIT');
      } catch (error) {
        // The server refused the commit (it rolled back), or the connection went
        // while the commit was in flight: then nobody here knows whether it landed.
        if (!lostConnection(error)) throw error;
        broken = toError(error);
        throw new CommitUnknown(error);
      }
      return result;
    } catch (error) {
      throw this.fail(what, error);
    } finally {
      // pg-pool also drops a client whose connection it saw end.
      client.release(broken);
    }
  }

  /** Ends the pool when the store created it; a pool you passed stays open. */
  async close(): Promise<void> {
    if (!this.owned || this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}

/**
 * The name a statement is prepared under on each connection: derived from its
 * text, so two stores over different schemas sharing one pool never reuse
 * each other's statements.
 */
export function statementName(text: string): string {
  return `cairn_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
}

/** A failure of the connection rather than an answer from the server: class 08, class 57 or no SQLSTATE. */
function lostConnection(error: unknown): boolean {
  const code = pgCode(error);
  return code === undefined || code.startsWith('08') || code.startsWith('57');
}

function toError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

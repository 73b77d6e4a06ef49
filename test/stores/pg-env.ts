/**
 * PostgreSQL for the test suites. `CAIRN_TEST_POSTGRES_URL` says where
 * (default `postgres://root@127.0.0.1:5432/test`). A suite registered with
 * `describePostgres` runs when that database answers; when it does not, the
 * suite is skipped with a warning, except on CI (`CI=true`), where it fails.
 *
 * Each suite works in schemas of its own (random names, dropped after the
 * suite), so test files running in parallel never see each other's tables.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';

export const DEFAULT_POSTGRES_URL = 'postgres://root@127.0.0.1:5432/test';

/** The database the tests use. */
export function postgresUrl(): string {
  return process.env.CAIRN_TEST_POSTGRES_URL || DEFAULT_POSTGRES_URL;
}

/** The database's URL without a password, for messages. */
function shown(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}

async function probe(url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

// Once per test file that imports this module.
const unreachable = await probe(postgresUrl());

export interface PostgresTestEnv {
  /** The database URL. */
  url: string;
  /**
   * A schema name no other suite or test uses (created by the store's
   * setup(), or by you). Every name handed out is dropped after the suite.
   */
  newSchema(): string;
  /** Runs one statement on a short-lived client, outside any store. */
  sql<R extends object = Record<string, unknown>>(text: string, values?: unknown[]): Promise<R[]>;
}

/**
 * `describe` for suites that need PostgreSQL: runs `fn` with a
 * {@link PostgresTestEnv} when the database answers; otherwise skips with a
 * warning, or, on CI, registers a test that fails and says why.
 */
export function describePostgres(
  name: string,
  fn: (env: PostgresTestEnv) => void,
  options: { ownDatabase?: boolean } = {},
): void {
  const url = postgresUrl();
  if (unreachable !== null) {
    const why = `PostgreSQL at ${shown(url)} is not reachable (${unreachable}). Set CAIRN_TEST_POSTGRES_URL to a database the tests may create schemas in.`;
    if (process.env.CI === 'true') {
      describe(name, () => {
        it('needs PostgreSQL', () => {
          throw new Error(`${why} On CI these suites must run, so this fails.`);
        });
      });
      return;
    }
    console.warn(`[cairn tests] skipping "${name}": ${why}`);
    describe.skip(name, () => fn({ url, newSchema: () => '', sql: async () => [] }));
    return;
  }
  describe(name, () => {
    const schemas: string[] = [];
    const env: PostgresTestEnv = {
      url,
      newSchema() {
        const schema = `cairn_test_${randomBytes(6).toString('hex')}`;
        schemas.push(schema);
        return schema;
      },
      async sql(text, values = []) {
        const client = new pg.Client({ connectionString: env.url });
        client.on('error', () => undefined);
        await client.connect();
        try {
          return (await client.query(text, values)).rows;
        } finally {
          await client.end().catch(() => undefined);
        }
      },
    };
    if (options.ownDatabase) {
      // A database of the suite's own: graphile-worker tells every worker listening in a database to shut down when
      // any queue schema in it takes a breaking migration (its NOTIFY channel is not per schema), so suites that run
      // workers must not share one with suites that create queues.
      const database = `cairn_test_db_${randomBytes(6).toString('hex')}`;
      const admin = async (text: string) => {
        const client = new pg.Client({ connectionString: url });
        client.on('error', () => undefined);
        await client.connect();
        try {
          await client.query(text);
        } finally {
          await client.end().catch(() => undefined);
        }
      };
      // CREATE DATABASE and DROP DATABASE each wait for a checkpoint, which on a loaded machine with fsync on can take
      // longer than vitest's 10 s hook timeout (a CI run timed out in the drop), so both hooks get the schemas' 120 s.
      beforeAll(async () => {
        await admin(`CREATE DATABASE "${database}"`);
        const own = new URL(url);
        own.pathname = `/${database}`;
        env.url = own.toString();
      }, 120_000);
      afterAll(async () => {
        env.url = url;
        await admin(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      }, 120_000);
    }
    // A suite of many cases drops dozens of schemas one by one: on a loaded machine that outlasts vitest's 10 s hook timeout.
    afterAll(async () => {
      for (const schema of schemas.splice(0)) await env.sql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }, 120_000);
    fn(env);
  });
}

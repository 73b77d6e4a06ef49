/**
 * The store matrix the conformance test files share: one call runs a suite
 * (memory, chat, ledger, sessions) against the in-memory store, a SQLite file
 * and a PostgreSQL schema (describePostgres), handing the suite a store
 * factory for each. A durable case's every open() is another object over the
 * same file or schema, as a second process opens it; destroy closes every
 * object the case opened, then removes the file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { createPostgresOpsStore, type PostgresOpsStore } from 'cairn/ops/postgres';
import { createSqliteOpsStore, type SqliteOpsStore, type SqliteOpsStoreOptions } from 'cairn/ops/sqlite';
import type { BudgetLedger } from 'cairn/policy';
import type { ConformanceTestApi, LedgerFixture } from 'cairn/testing';
import { describePostgres, type PostgresTestEnv } from '../stores/pg-env.js';

/** A case on a database server sets up a schema (or a key prefix), races a few connections, may save a thousand runs and sleep through ttls. */
const SERVER_CASE_TIMEOUT_MS = 60_000;

/** vitest's describe and it, with the longer timeout a case on a database server needs. */
export const serverCaseApi: ConformanceTestApi = { describe, it: (name, fn) => it(name, fn, SERVER_CASE_TIMEOUT_MS) };

/**
 * The clock of a backend whose leases and journal times are on the server's
 * clock: `advance` sleeps, and the ttl is long enough that a few round trips on
 * a loaded machine (a renewal half a ttl late) never outlast it, short enough
 * to sleep through.
 */
export const SERVER_CLOCK = {
  advance: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
  ttlMs: 1_500,
};

/** Anything a case opens over its data and must close. */
export interface Closable {
  close(): void | Promise<void>;
}

/** What one case opened over its data. */
export interface Opened<T> {
  /** Opens another object over the case's data, as another process would. */
  open(): T;
  /** Closes every object opened so far; a restart closes them, then opens again. */
  closeAll(): Promise<void>;
}

/** Where one durable case's data lives, for fixtures that reach past the store (to corrupt a row, say). */
export type CaseData = { backend: 'sqlite'; path: string } | { backend: 'postgres'; env: PostgresTestEnv; schema: string };

/** The initializer shape every suite in the matrix takes (each suite's own type has these fields). */
export interface MatrixInitializer<F> {
  name: string;
  durable?: boolean;
  create(): Promise<F>;
  destroy?(fixture: F): Promise<void>;
}

/** How to open the durable backends' objects over one case's file or schema. */
export interface MatrixBackends<T extends Closable> {
  sqlite(path: string): T;
  postgres: {
    open(env: PostgresTestEnv, schema: string): T;
    /** Makes the fresh schema ready before the case opens anything on it. */
    setup(env: PostgresTestEnv, schema: string): Promise<void>;
  };
}

export interface StoreMatrix<T extends Closable, F> {
  /** Names the PostgreSQL describe block (`postgres <label>`) and the temporary directories. */
  label: string;
  /** The suite: defineMemoryStoreConformance and the like. */
  define(initializer: MatrixInitializer<F>, api: ConformanceTestApi): void;
  /** The in-memory fixture (one object: nothing to reopen). */
  inMemory(): F;
  backends: MatrixBackends<T>;
  /** A durable case's fixture over the objects `opened` opens. */
  fixture(opened: Opened<T>, data: CaseData): F | Promise<F>;
}

/** One case's fresh data: how to open an object over it, what removes it, and where it is. */
export interface CaseStart<T, D> {
  open(): T;
  /** Removes the data, after every object was closed. */
  cleanup?(): void;
  data: D;
}

/**
 * An initializer whose cases each start fresh data with `start`, build their
 * fixture over the objects opened on it, and in destroy close all of them,
 * then remove the data.
 */
export function openedInitializer<T extends Closable, F extends object, D = undefined>(
  name: string,
  start: () => Promise<CaseStart<T, D>>,
  fixture: (opened: Opened<T>, data: D) => F | Promise<F>,
): MatrixInitializer<F> & { destroy(fixture: F): Promise<void> } {
  const cases = new WeakMap<F, () => Promise<void>>();
  return {
    name,
    durable: true,
    async create() {
      const fresh = await start();
      const objects: T[] = [];
      const opened: Opened<T> = {
        open() {
          const object = fresh.open();
          objects.push(object);
          return object;
        },
        async closeAll() {
          for (const object of objects.splice(0)) await object.close();
        },
      };
      const finish = async () => {
        await opened.closeAll();
        fresh.cleanup?.();
      };
      let built: F;
      try {
        built = await fixture(opened, fresh.data);
      } catch (error) {
        await finish();
        throw error;
      }
      cases.set(built, finish);
      return built;
    },
    async destroy(built) {
      await cases.get(built)?.();
    },
  };
}

/** Registers `matrix.define` for the in-memory, SQLite and PostgreSQL backends. */
export function defineStoreMatrix<T extends Closable, F extends object>(matrix: StoreMatrix<T, F>): void {
  const { backends } = matrix;
  matrix.define({ name: 'in-memory', create: async () => matrix.inMemory() }, { describe, it });

  matrix.define(openedInitializer('sqlite', async (): Promise<CaseStart<T, CaseData>> => {
    const dir = mkdtempSync(join(tmpdir(), `cairn-${matrix.label.replace(/\W+/g, '-')}-`));
    const path = join(dir, 'ops.sqlite');
    return { open: () => backends.sqlite(path), cleanup: () => rmSync(dir, { recursive: true, force: true }), data: { backend: 'sqlite', path } };
  }, matrix.fixture), { describe, it });

  describePostgres(`postgres ${matrix.label}`, (env) => {
    matrix.define(openedInitializer('postgres', async (): Promise<CaseStart<T, CaseData>> => {
      const schema = env.newSchema();
      await backends.postgres.setup(env, schema);
      return { open: () => backends.postgres.open(env, schema), data: { backend: 'postgres', env, schema } };
    }, matrix.fixture), serverCaseApi);
  });
}

/** An SQLite or PostgreSQL ops store, as the matrix opens them. */
export type OpsStore = SqliteOpsStore | PostgresOpsStore;

/**
 * The ops stores as matrix backends: the SQLite file with `sqlite` options
 * (the suites that save many records pass `synchronous: 'normal'`: power-loss
 * durability is not what they check), and a PostgreSQL schema set up by a
 * store of its own before the case opens any.
 */
export function opsBackends(sqlite: Omit<SqliteOpsStoreOptions, 'path'> = {}): MatrixBackends<OpsStore> {
  return {
    sqlite: (path) => createSqliteOpsStore({ ...sqlite, path }),
    postgres: {
      open: (env, schema) => createPostgresOpsStore({ connectionString: env.url, poolOptions: { max: 4 } }, { schema }),
      async setup(env, schema) {
        const setup = createPostgresOpsStore({ connectionString: env.url, poolOptions: { max: 1 } }, { schema });
        await setup.setup();
        await setup.close();
      },
    },
  };
}

/** A store fixture over `opened`: the first object's store, and every reopen() another object's. */
export function reopening<T, S>(opened: Opened<T>, storeOf: (object: T) => S): { store: S; reopen(): Promise<S> } {
  return { store: storeOf(opened.open()), reopen: async () => storeOf(opened.open()) };
}

/** A ledger fixture over `opened`: every reopen() opens another store, restart() closes them all first. */
export function ledgerFixture(opened: Opened<{ budgets: { ledger(name: string): BudgetLedger } }>, name = 'conformance'): LedgerFixture {
  const ledger = async () => opened.open().budgets.ledger(name);
  return {
    ledger: opened.open().budgets.ledger(name),
    reopen: ledger,
    async restart() {
      await opened.closeAll();
      return ledger();
    },
  };
}

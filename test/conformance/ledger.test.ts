/**
 * The BudgetLedger conformance suite against the three ledgers: the in-memory
 * one (not durable, one object), and `ops.budgets.ledger(name)` of the SQLite
 * and PostgreSQL ops stores (durable; every reopen() is another store object
 * on the same file or schema, as a second process, and restart() closes them
 * all and opens a new one).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createInMemoryLedger, type BudgetLedger } from 'cairn/policy';
import { defineLedgerConformance, type LedgerFixture } from 'cairn/testing';
import { describePostgres, type PostgresTestEnv } from '../stores/pg-env.js';

const LEDGER = 'conformance';
// A Postgres case sets up a schema and races a few pools.
const CASE_TIMEOUT_MS = 60_000;

/** What an ops store is to these cases: its ledgers, and its close. */
interface Ops {
  budgets: { ledger(name: string): BudgetLedger };
  close(): void | Promise<void>;
}

/** What each case opened, so destroy closes it. */
const opened = new WeakMap<LedgerFixture, { stores: Ops[]; cleanup?: () => void }>();

/** A fixture over ops stores made by `open`: every reopen() opens another, restart() closes them all first. */
async function opsFixture(open: () => Ops, cleanup?: () => void): Promise<LedgerFixture> {
  const stores: Ops[] = [];
  const ledger = async () => {
    const ops = open();
    stores.push(ops);
    return ops.budgets.ledger(LEDGER);
  };
  const fixture: LedgerFixture = {
    ledger: await ledger(),
    reopen: ledger,
    async restart() {
      for (const ops of stores.splice(0)) await ops.close();
      return ledger();
    },
  };
  opened.set(fixture, { stores, cleanup });
  return fixture;
}

async function destroyOps(fixture: LedgerFixture): Promise<void> {
  const state = opened.get(fixture);
  for (const ops of state?.stores.splice(0) ?? []) await ops.close();
  state?.cleanup?.();
}

defineLedgerConformance({
  name: 'in-memory',
  create: async () => ({ ledger: createInMemoryLedger() }),
}, { describe, it });

defineLedgerConformance({
  name: 'sqlite',
  durable: true,
  async create() {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-ledger-conformance-'));
    return opsFixture(() => createSqliteOpsStore({ path: join(dir, 'ops.sqlite') }), () => rmSync(dir, { recursive: true, force: true }));
  },
  destroy: destroyOps,
}, { describe, it });

describePostgres('postgres ledger conformance', (env: PostgresTestEnv) => {
  defineLedgerConformance({
    name: 'postgres',
    durable: true,
    async create() {
      const schema = env.newSchema();
      const setup = createPostgresOpsStore({ connectionString: env.url, poolOptions: { max: 1 } }, { schema });
      await setup.setup();
      await setup.close();
      return opsFixture(() => createPostgresOpsStore({ connectionString: env.url, poolOptions: { max: 4 } }, { schema }));
    },
    destroy: destroyOps,
  }, { describe, it: (name, fn) => it(name, fn, CASE_TIMEOUT_MS) });
});

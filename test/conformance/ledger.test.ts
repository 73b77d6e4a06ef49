/**
 * The BudgetLedger conformance suite against the three ledgers: the in-memory
 * one (not durable, one object), and `ops.budgets.ledger(name)` of the SQLite
 * and PostgreSQL ops stores (durable; every reopen() is another store object
 * on the same file or schema, as a second process, and restart() closes them
 * all and opens a new one).
 */
import { createInMemoryLedger } from 'cairn/policy';
import { defineLedgerConformance } from 'cairn/testing';
import { defineStoreMatrix, ledgerFixture, opsBackends } from './store-matrix.js';

defineStoreMatrix({
  label: 'ledger conformance',
  define: defineLedgerConformance,
  inMemory: () => ({ ledger: createInMemoryLedger() }),
  backends: opsBackends(),
  fixture: (opened) => ledgerFixture(opened),
});

/**
 * The ops stores' `budgets`: named ledgers that admit, settle and restore as
 * the in-memory ledger does, that every store object on the file or database
 * shares, whose admissions never pass a ceiling together, and whose lock or
 * serialization conflict, when it outlasts the store's own tries, fails a run
 * as transient (budget_admission_conflict; retryFailed goes on).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeAgent, runAgent } from 'cairn/agent';
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createExecutionContext, createInMemoryLedger, type AdmitRequest, type BudgetLedger } from 'cairn/policy';
import { createMockModel } from 'cairn/testing';
import { describePostgres } from './pg-env.js';

const request = (id: string, usd: number | null, extra: Partial<AdmitRequest> = {}): AdmitRequest => ({
  id, scope: 'root', runId: 'x', model: 'mock:m', usd, tokens: 100, ceilings: [{ scope: 'root', usd: 1 }], at: 1, ...extra,
});

const rejection = (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error);

/** Cases every ledger answers alike: the store's and the in-memory one. */
function ledgerCases(open: () => Promise<{ ledger(name: string): BudgetLedger }>) {
  it('admits up to the ceiling, says what was spent, held and asked when it refuses, and answers a replayed id with its entry', async () => {
    const ledger = (await open()).ledger('a');
    expect(await ledger.admit(request('1', 0.4))).toMatchObject({ admitted: true, entry: { id: '1', status: 'reserved', usd: 0.4 } });
    expect(await ledger.admit(request('2', 0.4))).toMatchObject({ admitted: true });
    await ledger.settle('1', { status: 'committed', usd: 0.3, tokens: 90 });
    expect(await ledger.admit(request('3', 0.4))).toEqual({
      admitted: false, scope: 'root', ceiling: { usd: 1 }, spent: { usd: 0.3, tokens: 90 }, held: { usd: 0.4, tokens: 100 }, asked: { usd: 0.4, tokens: 100 },
    });
    // A replay of an admitted id reserves nothing more, even over the ceiling.
    expect(await ledger.admit(request('2', 0.4))).toMatchObject({ admitted: true, entry: { id: '2' } });
    expect((await ledger.entries()).map((e) => e.id)).toEqual(['1', '2']);
  });

  it('settles an open entry once: unknown keeps the estimate, released gives it back, a settled entry stays', async () => {
    const ledger = (await open()).ledger('b');
    for (const id of ['1', '2', '3']) await ledger.admit(request(id, 0.2));
    await ledger.settle('1', { status: 'unknown' });
    await ledger.settle('1', { status: 'committed', usd: 0.1, tokens: 5 });
    await ledger.settle('2', { status: 'released' });
    await ledger.settle('2', { status: 'committed', usd: 0.1, tokens: 5 });
    await ledger.settle('3', { status: 'committed', usd: null, tokens: 7 });
    await ledger.settle('missing', { status: 'unknown' });
    const byId = Object.fromEntries((await ledger.entries()).map((e) => [e.id, [e.status, e.usd, e.tokens]]));
    expect(byId).toEqual({ 1: ['committed', 0.1, 5], 2: ['released', 0, 0], 3: ['committed', null, 7] });
  });

  it('reads entries by scope (a scope with LIKE wildcards in its name too), keeps ledgers apart, and restores only what it lacks', async () => {
    const store = await open();
    const ledger = store.ledger('c');
    await ledger.admit(request('1', 0.1, { scope: 'root/a_b' }));
    await ledger.admit(request('2', 0.1, { scope: 'root/axb' }));
    await ledger.admit(request('3', 0.1, { scope: 'root/a_b/x' }));
    expect((await ledger.entries('root/a_b')).map((e) => e.id)).toEqual(['1', '3']);
    expect(await store.ledger('other').entries()).toEqual([]);
    const copy = await ledger.entries();
    const fresh = store.ledger('d');
    await fresh.restore(copy.slice(0, 2));
    await fresh.settle('1', { status: 'released' });
    await fresh.restore(copy);
    expect((await fresh.entries()).map((e) => [e.id, e.status])).toEqual([['1', 'released'], ['2', 'reserved'], ['3', 'reserved']]);
    expect(await fresh.entries()).toEqual([{ ...copy[0], status: 'released', usd: 0, tokens: 0 }, copy[1], copy[2]]);
  });
}

describe('the in-memory ledger (the reference the stores match)', () => {
  ledgerCases(async () => {
    const ledgers = new Map<string, BudgetLedger>();
    return { ledger: (name) => ledgers.get(name) ?? ledgers.set(name, createInMemoryLedger(name)).get(name)! };
  });
});

const prices = { 'mock:mock-model': { input: 1, output: 2 } };
const estimate = { inputTokens: 1000, outputTokens: 1000 };
const usage = { inputTokens: 1000, outputTokens: 500 };

describe('the SQLite ops store\'s budgets', () => {
  let dir: string;
  let stores: { close(): void }[];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cairn-budgets-'));
    stores = [];
  });
  afterEach(() => {
    for (const s of stores) s.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const open = (options: { busyTimeoutMs?: number; readonly?: boolean } = {}) => {
    const store = createSqliteOpsStore({ path: join(dir, 'ops.sqlite'), ...options });
    stores.push(store);
    return store;
  };

  ledgerCases(async () => open().budgets);

  it('is one ledger for every store object on the file: runs under two contexts spend from the same ceiling', async () => {
    const [a, b] = [open(), open()];
    const context = (ops: ReturnType<typeof open>) => createExecutionContext({ ledger: ops.budgets.ledger('team'), prices, budget: { usd: 0.005, estimate } });
    const first = await runAgent({ model: createMockModel({ responses: [{ text: 'A.', usage }] }), prompt: 'Go.', execution: context(a) });
    expect(first.status).toBe('completed');
    // 0.002 committed; the next estimate (0.003) still fits, the one after it no longer does.
    const second = await runAgent({ model: createMockModel({ responses: [{ text: 'B.', usage }] }), prompt: 'Go.', execution: context(b) });
    expect(second.status).toBe('completed');
    const third = await runAgent({ model: createMockModel({ responses: [{ text: 'C.', usage }] }), prompt: 'Go.', execution: context(a) });
    expect(third).toMatchObject({ status: 'stopped', reason: 'budget-exceeded' });
    expect(await context(b).accounting()).toEqual({ committed: { usd: 0.004, tokens: 3000 }, reserved: { usd: 0, tokens: 0 }, unknown: { usd: 0, tokens: 0 } });
  });

  it('a write lock held past the busy timeout fails the run as transient, and retryFailed goes on once it is free', async () => {
    const ops = open({ busyTimeoutMs: 20 });
    ops.budgets.ledger('team'); // the schema is in place
    const execution = createExecutionContext({ ledger: ops.budgets.ledger('team'), prices, budget: { usd: 1, estimate } });
    const blocker = new Database(join(dir, 'ops.sqlite'));
    blocker.exec('BEGIN IMMEDIATE');
    // The run's record elsewhere: the lock would hold its saves up too.
    const options = { prompt: 'Go.', execution, session: { store: createInMemoryAgentRunStore(), runId: 'r', scope: 's' } };
    try {
      const failed = await runAgent({ ...options, model: createMockModel({ responses: [] }) });
      expect(failed).toMatchObject({ status: 'failed', error: { code: 'budget_admission_conflict' }, retry: { cause: 'serialization-conflict' } });
    } finally {
      blocker.exec('ROLLBACK');
      blocker.close();
    }
    const retried = await resumeAgent({ ...options, model: createMockModel({ responses: [{ text: 'Done.', usage }] }), retryFailed: true });
    expect(retried.status).toBe('completed');
    expect((await execution.ledger.entries()).map((e) => e.status)).toEqual(['committed']);
  });

  it('a read-only store reads a ledger and refuses to write to it', async () => {
    const writer = open();
    await writer.budgets.ledger('team').admit(request('1', 0.1));
    writer.close();
    const reader = open({ readonly: true });
    expect((await reader.budgets.ledger('team').entries()).map((e) => e.id)).toEqual(['1']);
    expect(await rejection(reader.budgets.ledger('team').admit(request('2', 0.1)))).toMatchObject({ code: 'invalid_options' });
    expect(await rejection(reader.budgets.ledger('team').settle('1', { status: 'released' }))).toMatchObject({ code: 'invalid_options' });
  });

  it('refuses a ledger name that is not a non-empty string', () => {
    const ops = open();
    for (const name of ['', 7, 'x'.repeat(201)]) expect(() => ops.budgets.ledger(name as string)).toThrow(/name must be/);
  });
});

describePostgres('the PostgreSQL ops store\'s budgets', (env) => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });
  const open = async (schema: string, connection?: { pool: pg.Pool }) => {
    const ops = createPostgresOpsStore(connection ?? { connectionString: env.url }, { schema });
    closers.push(() => ops.close());
    await ops.setup();
    return ops;
  };

  ledgerCases(async () => (await open(env.newSchema())).budgets);

  it('never admits past the ceiling when many pools admit at once', async () => {
    const schema = env.newSchema();
    const stores = await Promise.all(Array.from({ length: 4 }, () => open(schema)));
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) =>
      stores[i % 4]!.budgets.ledger('shared').admit(request(`e${i}`, 0.07))));
    // 14 × 0.07 = 0.98 fits under 1, a 15th does not.
    expect(results.filter((r) => r.admitted)).toHaveLength(14);
    const entries = await stores[0]!.budgets.ledger('shared').entries();
    expect(entries).toHaveLength(14);
  });

  it('tries a serialization conflict again, and one that keeps coming fails the run as transient (retryFailed goes on)', async () => {
    const schema = env.newSchema();
    await open(schema);
    const pool = new pg.Pool({ connectionString: env.url });
    closers.push(() => pool.end());
    let conflicts = 0;
    // Every statement that locks a ledger's row fails with 40001 while `conflicts` lasts.
    const connect = pool.connect.bind(pool);
    (pool as { connect: unknown }).connect = async () => {
      const client = await connect();
      const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
      (client as { query: unknown }).query = (...args: unknown[]) => {
        if (typeof args[0] === 'string' && args[0].includes('cairn_budget_ledgers') && conflicts > 0) {
          conflicts -= 1;
          return Promise.reject(Object.assign(new Error('could not serialize access due to concurrent update'), { code: '40001' }));
        }
        return query(...args);
      };
      return client;
    };
    const ops = await open(schema, { pool });
    const ledger = ops.budgets.ledger('shared');
    conflicts = 2;
    expect(await ledger.admit(request('1', 0.1))).toMatchObject({ admitted: true });
    conflicts = 100;
    const error = await rejection(ledger.admit(request('2', 0.1)));
    expect(error).toMatchObject({ name: 'BudgetError', code: 'budget_admission_conflict', isRetryable: true, cause: { code: '40001' } });
    const execution = createExecutionContext({ ledger, prices, budget: { usd: 1, estimate } });
    const options = { prompt: 'Go.', execution, session: { store: ops.agentRuns, runId: 'r', scope: 's' } };
    const failed = await runAgent({ ...options, model: createMockModel({ responses: [] }) });
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'budget_admission_conflict' }, retry: { cause: 'serialization-conflict' } });
    conflicts = 0;
    const retried = await resumeAgent({ ...options, model: createMockModel({ responses: [{ text: 'Done.', usage }] }), retryFailed: true });
    expect(retried.status).toBe('completed');
    expect((await ledger.entries('root')).filter((e) => e.runId === 'r').map((e) => e.status)).toEqual(['committed']);
  });
});

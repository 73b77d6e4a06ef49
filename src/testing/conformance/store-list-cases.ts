/**
 * Cases for `list` and `prune`: filters, order, paging by cursor, retention.
 */
import assert from 'node:assert/strict';
import type {
  AgentRunEnvelope, AgentRunListPage, AgentRunListQuery, AgentRunStatus, AgentRunStore, AgentRunSummary,
} from '../../agent/types.js';
import { rejectsWith } from './assert.js';
import { buildEnvelope, type EnvelopeSpec } from './envelopes.js';
import type { StoreCaseRegistrar } from './types.js';

const INVALID = { name: 'InvalidOptionsError', code: 'invalid_options' };

function listOf(store: AgentRunStore): NonNullable<AgentRunStore['list']> {
  assert.ok(typeof store.list === 'function', 'the store has no list(); set features.list to false if it should not');
  return store.list.bind(store);
}

function pruneOf(store: AgentRunStore): NonNullable<AgentRunStore['prune']> {
  assert.ok(typeof store.prune === 'function', 'the store has no prune(); set features.prune to false if it should not');
  return store.prune.bind(store);
}

function summaryOf(envelope: AgentRunEnvelope): AgentRunSummary {
  return {
    runId: envelope.runId,
    scope: envelope.scope,
    status: envelope.status,
    revision: envelope.revision,
    bindingId: envelope.bindingId,
    createdAt: envelope.createdAt,
    updatedAt: envelope.updatedAt,
    pendingApprovals: envelope.pendingApprovals.length,
    pendingClientCalls: envelope.pendingClientCalls.length,
  };
}

/** The contract's order: newest `updatedAt` first, then runId descending (code-unit order; use ASCII ids). */
function byListOrder(a: AgentRunSummary, b: AgentRunSummary): number {
  if (a.updatedAt !== b.updatedAt) return b.updatedAt - a.updatedAt;
  return a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0;
}

/** Saves each spec as its run's revisions 1..n (the last spec of a runId wins) and returns the latest envelope of each run. */
async function seed(store: AgentRunStore, specs: EnvelopeSpec[]): Promise<Map<string, AgentRunEnvelope>> {
  const latest = new Map<string, AgentRunEnvelope>();
  for (const spec of specs) {
    const revision = (latest.get(spec.runId)?.revision ?? 0) + 1;
    const envelope = buildEnvelope({ ...spec, revision });
    await store.save(envelope);
    latest.set(spec.runId, envelope);
  }
  return latest;
}

/** Every page of a query, following nextCursor. */
async function allPages(store: AgentRunStore, query: AgentRunListQuery): Promise<AgentRunListPage[]> {
  const list = listOf(store);
  const pages: AgentRunListPage[] = [];
  let cursor: string | undefined;
  do {
    const page = await list({ ...query, ...(cursor === undefined ? {} : { cursor }) });
    pages.push(page);
    cursor = page.nextCursor;
    assert.ok(pages.length <= 1000, 'nextCursor never ran out');
  } while (cursor !== undefined);
  return pages;
}

/** A mixed population: scopes, statuses, times with ties, runs saved more than once. */
function population(): EnvelopeSpec[] {
  const statuses: AgentRunStatus[] = ['running', 'suspended', 'completed', 'drained', 'stopped', 'failed'];
  const specs: EnvelopeSpec[] = [];
  for (let i = 0; i < 30; i++) {
    const runId = `run-${String(i).padStart(2, '0')}`;
    const status = statuses[i % statuses.length]!;
    // Times 100..1000 with ties: i and i + 10 share a time for i < 10.
    const updatedAt = 100 * ((i % 10) + 1);
    specs.push({
      runId, scope: i % 3 === 0 ? 'tenant-b' : 'tenant-a', status, createdAt: 50 + i, updatedAt,
      steps: 1 + (i % 4), openCalls: status === 'running',
      pendingApprovals: status === 'suspended' ? 1 + (i % 2) : 0,
      pendingClientCalls: status === 'suspended' && i % 2 === 0 ? 1 : 0,
    });
  }
  // Saved again: the list shows each run once, as last saved.
  specs.push({ runId: 'run-04', scope: 'tenant-a', status: 'suspended', createdAt: 54, updatedAt: 1050, steps: 3, pendingApprovals: 2 });
  specs.push({ runId: 'run-04', scope: 'tenant-a', status: 'completed', createdAt: 54, updatedAt: 1100, steps: 4 });
  specs.push({ runId: 'run-07', scope: 'tenant-a', status: 'running', createdAt: 57, updatedAt: 1000, steps: 5, openCalls: true });
  return specs;
}

export function registerListCases(register: StoreCaseRegistrar): void {
  register('lists one summary per run, as last saved, newest update first and ties by runId descending', async (fx) => {
    const list = listOf(fx.store);
    assert.deepStrictEqual(await list(), { runs: [] }, 'create() must return an empty store');
    const latest = await seed(fx.store, population());
    const expected = [...latest.values()].map(summaryOf).sort(byListOrder);
    const page = await list({ limit: 1000 });
    assert.deepStrictEqual(page.runs, expected);
    assert.equal(page.nextCursor, undefined, 'nextCursor on a page that holds every run');
    assert.deepStrictEqual(page.runs.find((r) => r.runId === 'run-04'),
      { runId: 'run-04', scope: 'tenant-a', status: 'completed', revision: 3, bindingId: 'conformance-v1', createdAt: 54, updatedAt: 1100, pendingApprovals: 0, pendingClientCalls: 0 });
  });

  register('filters by status (one or several), scope and update time', async (fx) => {
    const latest = await seed(fx.store, population());
    const all = [...latest.values()].map(summaryOf).sort(byListOrder);
    const cases: [AgentRunListQuery, (s: AgentRunSummary) => boolean][] = [
      [{ status: 'suspended' }, (s) => s.status === 'suspended'],
      [{ status: 'drained' }, (s) => s.status === 'drained'],
      [{ status: ['completed', 'failed', 'stopped'] }, (s) => ['completed', 'failed', 'stopped'].includes(s.status)],
      [{ status: [] }, () => false],
      [{ scope: 'tenant-b' }, (s) => s.scope === 'tenant-b'],
      [{ scope: 'tenant-none' }, () => false],
      [{ updatedBefore: 500 }, (s) => s.updatedAt < 500],
      [{ updatedAfter: 500 }, (s) => s.updatedAt >= 500],
      [{ updatedAfter: 300, updatedBefore: 700 }, (s) => s.updatedAt >= 300 && s.updatedAt < 700],
      [{ updatedAfter: 700, updatedBefore: 300 }, () => false],
      [{ scope: 'tenant-a', status: ['running', 'suspended'], updatedAfter: 200, updatedBefore: 1001 },
        (s) => s.scope === 'tenant-a' && ['running', 'suspended'].includes(s.status) && s.updatedAt >= 200 && s.updatedAt < 1001],
    ];
    for (const [query, keep] of cases) {
      const runs = (await allPages(fx.store, { ...query, limit: 4 })).flatMap((p) => p.runs);
      assert.deepStrictEqual(runs, all.filter(keep), `list(${JSON.stringify(query)})`);
    }
  });

  register('pages by limit and cursor without repeats or gaps; the last page has no nextCursor', async (fx) => {
    const latest = await seed(fx.store, population());
    const all = [...latest.values()].map(summaryOf).sort(byListOrder);
    assert.equal(all.length, 30);
    for (const limit of [1, 4, 7, 10, 29, 30, 31]) {
      const pages = await allPages(fx.store, { limit });
      assert.deepStrictEqual(pages.flatMap((p) => p.runs), all, `pages of ${limit}`);
      assert.equal(pages.length, Math.max(1, Math.ceil(all.length / limit)), `${limit} a page: a page too many or too few`);
      for (const page of pages.slice(0, -1)) assert.equal(page.runs.length, limit, `a full page of ${limit}`);
    }
    // Paging and filters together.
    const filtered = await allPages(fx.store, { scope: 'tenant-a', status: ['running', 'completed'], limit: 2 });
    assert.deepStrictEqual(filtered.flatMap((p) => p.runs),
      all.filter((s) => s.scope === 'tenant-a' && ['running', 'completed'].includes(s.status)));
  });

  register('keeps paging stable while runs are saved between pages', async (fx) => {
    const list = listOf(fx.store);
    const specs: EnvelopeSpec[] = Array.from({ length: 12 }, (_, i) => ({
      runId: `page-${String(i).padStart(2, '0')}`, status: 'completed', updatedAt: 1000 + 100 * Math.floor(i / 2),
    }));
    const before = [...(await seed(fx.store, specs)).values()].map(summaryOf).sort(byListOrder);
    const first = await list({ limit: 4 });
    assert.deepStrictEqual(first.runs, before.slice(0, 4));
    // Newer runs (not in this pass), older ones and ones between runs not yet seen (both in it), a tie with the cursor.
    const cursorAt = first.runs[3]!;
    const inserted = await seed(fx.store, [
      { runId: 'late-new-1', status: 'completed', updatedAt: 9000 },
      { runId: 'late-new-2', status: 'completed', updatedAt: cursorAt.updatedAt + 1 },
      { runId: 'late-old', status: 'completed', updatedAt: 10 },
      { runId: 'late-mid', status: 'completed', updatedAt: 1150 },
      { runId: 'page-00a', status: 'completed', updatedAt: cursorAt.updatedAt },
      { runId: 'page-99', status: 'completed', updatedAt: cursorAt.updatedAt },
    ]);
    const rest: AgentRunSummary[] = [];
    let cursor = first.nextCursor;
    assert.ok(cursor, 'the first of several pages has a nextCursor');
    while (cursor !== undefined) {
      const page = await list({ limit: 4, cursor });
      rest.push(...page.runs);
      cursor = page.nextCursor;
    }
    const everything = [...before, ...[...inserted.values()].map(summaryOf)].sort(byListOrder);
    const after = everything.filter((s) => byListOrder(s, cursorAt) > 0);
    assert.deepStrictEqual(rest, after, 'the pages after the first: every run past the cursor, once, in order');
    assert.ok(!rest.some((s) => first.runs.some((f) => f.runId === s.runId)), 'a run of the first page came again');
  });

  register('gives 50 a page by default and at most 1000', async (fx) => {
    const list = listOf(fx.store);
    const ids = Array.from({ length: 1001 }, (_, i) => `bulk-${String(i).padStart(4, '0')}`);
    for (let i = 0; i < ids.length; i += 50) {
      await Promise.all(ids.slice(i, i + 50).map((runId, j) => fx.store.save(buildEnvelope({
        runId, status: 'completed', steps: 1, updatedAt: 5000 + ((i + j) % 7),
      }))));
    }
    const firstDefault = await list();
    assert.equal(firstDefault.runs.length, 50);
    assert.ok(firstDefault.nextCursor);
    const big = await list({ limit: 5000 });
    assert.equal(big.runs.length, 1000);
    assert.ok(big.nextCursor, 'a thousand of 1001 runs: more match');
    const last = await list({ limit: 5000, cursor: big.nextCursor });
    assert.equal(last.runs.length, 1);
    assert.equal(last.nextCursor, undefined);
    const seen = new Set([...big.runs, ...last.runs].map((r) => r.runId));
    assert.equal(seen.size, 1001);
  });

  register('refuses a malformed query with invalid_options', async (fx) => {
    const list = listOf(fx.store);
    await seed(fx.store, population().slice(0, 5));
    const queries: AgentRunListQuery[] = [{ limit: 0 }, { limit: -5 }, { limit: 2.5 }, { cursor: 'not-a-cursor' }, { cursor: '' },
      { status: 'finished' as AgentRunStatus }, { status: ['running', 'paused' as AgentRunStatus] }];
    for (const query of queries) {
      await rejectsWith(list(query), INVALID, `list(${JSON.stringify(query)})`);
    }
  });
}

export function registerPruneCases(register: StoreCaseRegistrar): void {
  register('prunes terminal runs last saved before the time, only those, and returns the count', async (fx) => {
    const prune = pruneOf(fx.store);
    const latest = await seed(fx.store, [
      { runId: 'old-completed', status: 'completed', updatedAt: 100 },
      { runId: 'old-failed', status: 'failed', updatedAt: 200 },
      { runId: 'old-stopped', status: 'stopped', updatedAt: 499 },
      { runId: 'at-the-time', status: 'completed', updatedAt: 500 },
      { runId: 'new-completed', status: 'completed', updatedAt: 900 },
      { runId: 'old-running', status: 'running', updatedAt: 100, openCalls: true },
      { runId: 'old-suspended', status: 'suspended', updatedAt: 100, pendingApprovals: 1 },
      { runId: 'old-drained', status: 'drained', updatedAt: 100 },
      { runId: 'resaved', status: 'completed', updatedAt: 100 },
      { runId: 'resaved', status: 'completed', updatedAt: 800, steps: 2 },
      { runId: 'ended-late', status: 'running', updatedAt: 100 },
      { runId: 'ended-late', status: 'failed', updatedAt: 600 },
    ]);
    assert.equal(await prune({ terminalBefore: 500 }), 3);
    const gone = ['old-completed', 'old-failed', 'old-stopped'];
    for (const [runId, envelope] of latest) {
      const loaded = await fx.store.load(runId);
      if (gone.includes(runId)) assert.equal(loaded, undefined, `${runId} was not pruned`);
      else assert.deepStrictEqual(loaded, JSON.parse(JSON.stringify(envelope)), `${runId} changed or went`);
    }
    if (typeof fx.store.list === 'function') {
      const listed = (await fx.store.list({ limit: 1000 })).runs.map((r) => r.runId).sort();
      assert.deepStrictEqual(listed, [...latest.keys()].filter((id) => !gone.includes(id)).sort());
    }
    assert.equal(await prune({ terminalBefore: 500 }), 0, 'a second prune found more');
    assert.equal(await prune({ terminalBefore: 1000 }), 4, 'the rest of the terminal runs before 1000');
    assert.deepStrictEqual((await Promise.all(['old-running', 'old-suspended', 'old-drained'].map((id) => fx.store.load(id))))
      .map((e) => e?.status), ['running', 'suspended', 'drained']);
  });

  register('lets a pruned run id start again at revision 1', async (fx) => {
    const prune = pruneOf(fx.store);
    await seed(fx.store, [
      { runId: 'reused', status: 'running', updatedAt: 100 },
      { runId: 'reused', status: 'completed', updatedAt: 200 },
    ]);
    assert.equal(await prune({ terminalBefore: 300 }), 1);
    const again = buildEnvelope({ runId: 'reused', revision: 1, updatedAt: 400, marker: 'second life' });
    await fx.store.save(again);
    assert.deepStrictEqual(await fx.store.load('reused'), JSON.parse(JSON.stringify(again)));
  });
}

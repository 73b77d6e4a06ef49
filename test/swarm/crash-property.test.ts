/**
 * A crash at any write resumes the DAG with every task's effects once and
 * every task ended. fast-check picks where the process dies (before or after
 * any save of the swarm, of a task's run, or of a blackboard write; or a save
 * that throws once), the concurrency, and whether the next process calls
 * runAgentGroup again or resumeAgentGroup; a second fault may hit the
 * resuming process too. Effects are counted outside every store. Before the
 * property, one pass dies at every write in turn (before it, after it, or
 * throwing at it) on the in-memory store.
 *
 * Runs: CAIRN_PROPERTY_RUNS (default 40 in memory, a few on SQLite and
 * PostgreSQL). The seed is printed; CAIRN_PROPERTY_SEED replays one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AgentTool } from 'cairn/agent';
import type { LanguageModel } from 'cairn/models';
import { createExecutionContext } from 'cairn/policy';
import { createInMemorySwarmStore, resumeAgentGroup, runAgentGroup, type SwarmResult, type SwarmStore, type SwarmTaskSpec } from 'cairn/swarm';
import { createSqliteSwarmStore } from 'cairn/swarm/sqlite';
import { createPostgresSwarmStore } from 'cairn/swarm/postgres';
import { describePostgres } from '../stores/pg-env.js';
import { faultyStore, type FaultyStore, type SwarmFault } from './crash-store.js';
import { planModel } from './helpers.js';

const TASKS = ['a', 'b', 'c', 'd', 'extra'];
const never = <T>() => new Promise<T>(() => undefined);

/** What happened outside every store: each effect keyed by its call, as an idempotency-keyed API would keep it. */
class World {
  applied = new Map<string, string>();
  executions = 0;
  perTask(task: string): number {
    return [...this.applied.values()].filter((t) => t === task).length;
  }
}

function frozenModel(model: LanguageModel, fs: FaultyStore): LanguageModel {
  return { ...model, doGenerate: (request) => (fs.frozen() ? never() : model.doGenerate(request).then((r) => (fs.frozen() ? never() : r))) };
}

function effectTool(world: World, fs: FaultyStore): AgentTool {
  return {
    description: 'An effect outside the stores, deduplicated by its key.',
    parameters: { type: 'object', properties: { task: { type: 'string' } }, required: ['task'] },
    replay: 'idempotent',
    async execute(args: { task: string }, ctx) {
      if (fs.frozen()) return never();
      world.executions += 1;
      const key = `${args.task}:${ctx.modelStep}:${ctx.toolCallId}`;
      if (!world.applied.has(key)) world.applied.set(key, args.task);
      return { ok: true };
    },
  };
}

function definition(world: World, fs: FaultyStore) {
  const model = frozenModel(planModel((prompt) => {
    const task = prompt.replace('task ', '');
    const calls = [
      { toolName: 'blackboard_write', args: { key: task, value: { from: task } } },
      { toolName: 'effect', args: { task } },
    ];
    if (task === 'b') calls.push({ toolName: 'spawn_task', args: { taskId: 'extra', agent: 'helper', prompt: 'task extra', before: ['d'] } as never });
    return calls;
  }), fs);
  const agent = { model, tools: { effect: effectTool(world, fs) } };
  const tasks: SwarmTaskSpec[] = [
    { id: 'a', agent, input: 'task a' },
    { id: 'b', agent, input: 'task b', dependsOn: ['a'] },
    { id: 'c', agent, input: 'task c', dependsOn: ['a'] },
    { id: 'd', agent, input: 'task d', dependsOn: ['b', 'c'] },
  ];
  return { tasks, agents: { helper: agent } };
}

type LegOutcome = { crashed: true } | { crashed: false; result: SwarmResult };

async function leg(inner: SwarmStore, world: World, fault: SwarmFault | undefined, resume: boolean, concurrency: number): Promise<LegOutcome & { writes: number }> {
  const fs = faultyStore(inner, fault);
  const { tasks, agents } = definition(world, fs);
  const options = {
    session: { store: fs.store, swarmId: 'sw', scope: 't' }, tasks, agents, concurrency,
    // A new process: a new context over an empty in-memory ledger, restored from the records.
    execution: createExecutionContext({ name: 'swarm', budget: { tokens: 1_000_000 } }),
  };
  const stored = await inner.loadSwarm('sw', { scope: 't' });
  const run = resume && stored ? resumeAgentGroup(options) : runAgentGroup(options);
  const outcome = await Promise.race([run.then((result) => ({ crashed: false as const, result })), fs.crashed.then(() => ({ crashed: true as const }))]);
  return { ...outcome, writes: fs.writes };
}

async function check(inner: SwarmStore, faults: SwarmFault[], resumes: boolean[], concurrency: number): Promise<void> {
  try {
    await checkLegs(inner, faults, resumes, concurrency);
  } catch (error) {
    // What the swarm journaled, to see which step went wrong.
    const journal = await inner.readJournal('sw').catch(() => []);
    console.log(`[swarm crash property] failed for ${JSON.stringify({ faults, resumes, concurrency })}; journal:\n${journal.map((e) => `${e.seq} ${e.type} ${e.taskId ?? ''} ${JSON.stringify(e.data ?? null)}`).join('\n')}`);
    throw error;
  }
}

async function checkLegs(inner: SwarmStore, faults: SwarmFault[], resumes: boolean[], concurrency: number): Promise<void> {
  const world = new World();
  let last: LegOutcome | undefined;
  for (let i = 0; i < 6; i += 1) {
    last = await leg(inner, world, faults[i], resumes[i % resumes.length]!, concurrency);
    if (!last.crashed && last.result.status === 'completed') break;
  }
  if (last && !last.crashed && last.result.status !== 'completed') {
    const errors = Object.values(last.result.tasks).map((t) => `${t.taskId}: ${t.status} ${JSON.stringify(t.result && 'error' in t.result ? t.result.error : t.result?.status)}`);
    console.log(`[swarm crash property] ended ${last.result.status} ${JSON.stringify(last.result.error ?? null)}\n${errors.join('\n')}`);
  }
  expect(last && !last.crashed && last.result.status, JSON.stringify(faults)).toBe('completed');
  const result = (last as { result: SwarmResult }).result;
  for (const task of TASKS) {
    expect(result.tasks[task]?.status, task).toBe('completed');
    expect(world.perTask(task), `effects of ${task}`).toBe(1);
  }
  const board = await inner.readBlackboard('sw');
  expect(board.map((e) => [e.key, e.version])).toEqual(TASKS.map((t) => [t, 1]).sort());
  const journal = await inner.readJournal('sw');
  expect(journal.map((e) => e.seq)).toEqual(journal.map((_, i) => i + 1));
  for (const task of TASKS) expect(journal.filter((e) => e.type === 'task-completed' && e.taskId === task)).toHaveLength(1);
  expect(journal.filter((e) => e.type === 'spawned')).toHaveLength(1);
  expect(journal.filter((e) => e.type === 'blackboard-written')).toHaveLength(TASKS.length);
  expect(journal.filter((e) => e.type === 'swarm-completed')).toHaveLength(1);
  // A spawned task started only after its spawn was journaled; every task started after it was ready.
  const seqOf = (type: string, task?: string) => journal.find((e) => e.type === type && e.taskId === task)?.seq ?? Infinity;
  expect(seqOf('spawned', 'extra')).toBeLessThan(seqOf('task-started', 'extra'));
  expect(seqOf('task-completed', 'extra')).toBeLessThan(seqOf('task-started', 'd'));
}

function property(label: string, open: () => Promise<{ store: SwarmStore; close(): Promise<void> }>, defaultRuns: number) {
  it(`${label}: every task's effects once and every task ended, whatever write the process dies at`, async () => {
    // How many writes a run without faults makes: the faults land among them.
    const clean = await open();
    const counted = await leg(clean.store, new World(), undefined, false, 2);
    await clean.close();
    const total = counted.writes;
    expect(total).toBeGreaterThan(20);
    const fault = fc.record({
      index: fc.integer({ min: 1, max: total }),
      mode: fc.constantFrom<'before' | 'after' | 'throw'>('before', 'after', 'throw'),
    }).map((f): SwarmFault => (f.mode === 'throw' ? { ...f, kinds: ['swarm', 'run'] } : f));
    const runs = Number(process.env.CAIRN_PROPERTY_RUNS ?? defaultRuns);
    const seed = process.env.CAIRN_PROPERTY_SEED ? Number(process.env.CAIRN_PROPERTY_SEED) : Date.now() % 2 ** 31;
    console.log(`[swarm crash property ${label}] seed=${seed} runs=${runs} writes=${total}`);
    await fc.assert(fc.asyncProperty(
      fc.array(fault, { minLength: 1, maxLength: 2 }), fc.array(fc.boolean(), { minLength: 1, maxLength: 3 }), fc.integer({ min: 1, max: 3 }),
      async (faults, resumes, concurrency) => {
        const fresh = await open();
        try {
          await check(fresh.store, faults, resumes, concurrency);
        } finally {
          await fresh.close();
        }
      },
    ), { numRuns: runs, seed, endOnFailure: true });
  }, 240_000);
}

describe('swarm crash at every write', () => {
  it('in-memory: dying before, and after, each write of a run in turn, then going on, runs every task\'s effects once', async () => {
    const clean = createInMemorySwarmStore();
    const total = (await leg(clean, new World(), undefined, false, 2)).writes;
    for (let index = 1; index <= total; index += 1) {
      for (const mode of ['before', 'after', 'throw'] as const) {
        const fault: SwarmFault = mode === 'throw' ? { index, mode, kinds: ['swarm', 'run'] } : { index, mode };
        await check(createInMemorySwarmStore(), [fault], [index % 2 === 0], 2);
      }
    }
  }, 240_000);
});

describe('swarm crash property', () => {
  property('in-memory', async () => ({ store: createInMemorySwarmStore(), close: async () => undefined }), 40);
  property('sqlite', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-swarm-crash-'));
    const store = createSqliteSwarmStore({ path: join(dir, 's.sqlite') });
    return { store, close: async () => { store.close(); rmSync(dir, { recursive: true, force: true }); } };
  }, 6);
});

describePostgres('swarm crash property on postgres', (env) => {
  property('postgres', async () => {
    const store = createPostgresSwarmStore({ connectionString: env.url, schema: env.newSchema(), poolOptions: { max: 4 } });
    await store.setup();
    return { store, close: () => store.close() };
  }, 4);
});

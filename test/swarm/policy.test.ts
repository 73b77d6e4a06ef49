/**
 * The swarm's shared execution context: tasks spend from one ledger, a
 * spent budget ends the tasks not started as `budget-exhausted`, a spawn
 * cannot widen the swarm's budget or close a cycle, and a task waiting for
 * an approval leaves the swarm `waiting` until resumeAgentGroup brings the
 * verdict.
 */
import { describe, expect, it } from 'vitest';
import { createExecutionContext } from 'cairn/policy';
import { createInMemorySwarmStore, resumeAgentGroup, runAgentGroup, type SwarmTaskSpec } from 'cairn/swarm';
import { planModel } from './helpers.js';

const chain = (agent: SwarmTaskSpec['agent']): SwarmTaskSpec[] => [
  { id: 'a', agent, input: 'task a' },
  { id: 'b', agent, input: 'task b', dependsOn: ['a'] },
  { id: 'c', agent, input: 'task c', dependsOn: ['b'] },
  { id: 'd', agent, input: 'task d', dependsOn: ['c'] },
];

describe('the swarm\'s policy and budget', () => {
  it('every task spends from the one ledger; once it is spent, the tasks not started end budget-exhausted', async () => {
    const model = planModel(() => []);
    // Each call is reserved at 15 tokens and uses 15: two tasks fit in 40, the third does not.
    const execution = createExecutionContext({ budget: { tokens: 40, estimate: { inputTokens: 10, outputTokens: 5 } } });
    const store = createInMemorySwarmStore();
    const result = await runAgentGroup({ session: { store, swarmId: 'b1', scope: 't' }, execution, tasks: chain({ model }) });
    expect(result.status).toBe('failed');
    expect(Object.values(result.tasks).map((t) => [t.taskId, t.status])).toEqual([
      ['a', 'completed'], ['b', 'completed'], ['c', 'budget-exhausted'], ['d', 'budget-exhausted'],
    ]);
    expect(result.tasks.c!.result).toMatchObject({ status: 'stopped', reason: 'budget-exceeded' });
    expect(result.tasks.d!.result).toBeUndefined();
    expect(result.accounting.committed.tokens).toBe(30);
    expect(model.calls).toBe(2);
    const journal = (await store.readJournal('b1')).map((e) => `${e.type}${e.taskId ? `:${e.taskId}` : ''}`);
    expect(journal.slice(-5)).toEqual(['task-started:c', 'budget-exhausted:c', 'task-budget-exhausted:c', 'task-budget-exhausted:d', 'swarm-failed']);
    // Each task's spend is charged under its own child context of the swarm's.
    const entries = await execution.ledger.entries();
    expect(new Set(entries.map((e) => e.scope))).toEqual(new Set(['root/a', 'root/b']));
  });

  it('a task about to start when the ledger holds the whole budget ends budget-exhausted without a run', async () => {
    const model = planModel(() => []);
    const execution = createExecutionContext({ budget: { tokens: 30, estimate: { inputTokens: 10, outputTokens: 5 } } });
    const store = createInMemorySwarmStore();
    const result = await runAgentGroup({ session: { store, swarmId: 'b3', scope: 't' }, execution, tasks: chain({ model }) });
    expect(Object.values(result.tasks).map((t) => t.status)).toEqual(['completed', 'completed', 'budget-exhausted', 'budget-exhausted']);
    expect(model.calls).toBe(2);
    expect(await store.runs.load('b3.c', { scope: 't' })).toBeUndefined();
    const c = (await store.readJournal('b3')).find((e) => e.type === 'task-budget-exhausted' && e.taskId === 'c');
    expect(c?.data).toMatchObject({ code: 'budget_exceeded' });
  });

  it('a resume goes on with the budget where it stood, not a fresh one', async () => {
    const model = planModel(() => []);
    const store = createInMemorySwarmStore();
    const budget = { tokens: 40, estimate: { inputTokens: 10, outputTokens: 5 } };
    const tasks = chain({ model });
    await runAgentGroup({ session: { store, swarmId: 'b2', scope: 't' }, execution: createExecutionContext({ budget }), tasks: tasks.slice(0, 1) });
    // Another process: a new context whose in-memory ledger is empty, restored from the swarm's records.
    const fresh = createExecutionContext({ budget });
    const again = await runAgentGroup({ session: { store, swarmId: 'b2', scope: 't' }, execution: fresh, tasks: tasks.slice(0, 1) });
    expect(again.accounting.committed.tokens).toBe(15);
    expect((await fresh.accounting()).committed.tokens).toBe(15);
  });

  it('refuses a spawn that would close a cycle, reuse an id or widen the budget: the call fails, nothing is spawned', async () => {
    const model = planModel((prompt) => (prompt !== 'task b' ? [] : [
      { toolName: 'spawn_task', args: { taskId: 'x', agent: 'helper', prompt: 'task x', dependsOn: ['d'], before: ['c'] } },
      { toolName: 'spawn_task', args: { taskId: 'a', agent: 'helper', prompt: 'task a again' } },
      { toolName: 'spawn_task', args: { taskId: 'y', agent: 'helper', prompt: 'task y', budget: { tokens: 5000 } } },
    ]));
    const store = createInMemorySwarmStore();
    const execution = createExecutionContext({ budget: { tokens: 1000, estimate: { inputTokens: 10, outputTokens: 5 } } });
    const result = await runAgentGroup({ session: { store, swarmId: 'sp', scope: 't' }, execution, agents: { helper: { model } }, tasks: chain({ model }) });
    expect(result.status).toBe('completed');
    expect(Object.keys(result.tasks)).toEqual(['a', 'b', 'c', 'd']);
    const outputs = result.tasks.b!.result!.messages.filter((m) => m.role === 'tool').map((m) => JSON.stringify(m));
    expect(outputs[0]).toMatch(/cycle/);
    expect(outputs[1]).toMatch(/exists already/);
    expect(outputs[2]).toMatch(/budget.tokens 5000 is more than the 1000/);
    expect((await store.readJournal('sp')).some((e) => e.type === 'spawned')).toBe(false);
  });

  it('a task held for approval leaves the swarm waiting; the verdict brought by resumeAgentGroup lets it and its dependents finish', async () => {
    const model = planModel((prompt) => (prompt === 'task b' ? [{ toolName: 'refund', args: { amount: 5 } }] : []));
    let refunds = 0;
    const agent = {
      model,
      tools: { refund: { parameters: { type: 'object', properties: { amount: { type: 'number' } } }, needsApproval: true, execute: async () => ({ refunded: ++refunds }) } },
    };
    const store = createInMemorySwarmStore();
    const session = { store, swarmId: 'ap', scope: 't' };
    const first = await runAgentGroup({ session, tasks: chain(agent) });
    expect(first.status).toBe('waiting');
    expect(first.tasks.b!.status).toBe('suspended');
    expect(first.tasks.c!.status).toBe('pending');
    const pending = first.tasks.b!.result as { pendingApprovals: Array<{ approvalId: string; token: string }> };
    // Resuming without the verdict changes nothing.
    expect((await resumeAgentGroup({ session, tasks: chain(agent) })).status).toBe('waiting');
    const { approvalId, token } = pending.pendingApprovals[0]!;
    const done = await resumeAgentGroup({ session, tasks: chain(agent), approvalResponses: { b: [{ approvalId, token, approved: true }] } });
    expect(done.status).toBe('completed');
    expect(refunds).toBe(1);
    const types = (await store.readJournal('ap')).map((e) => `${e.type}${e.taskId ? `:${e.taskId}` : ''}`);
    expect(types).toContain('task-suspended:b');
    expect(types).toContain('task-resumed:b');
  });
});

describe('abortSignal', () => {
  it('stops the leg (interrupted, nothing new starts); the next leg records the cancelled tasks stopped and goes on', async () => {
    const controller = new AbortController();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const base = planModel(() => []);
    const slow = {
      ...base,
      async doGenerate(request: Parameters<typeof base.doGenerate>[0]) {
        controller.abort();
        await gate;
        if (request.signal?.aborted) throw Object.assign(new Error('aborted'), { name: 'AbortError' });
        return base.doGenerate(request);
      },
    };
    const store = createInMemorySwarmStore();
    const session = { store, swarmId: 'ab', scope: 't' };
    const tasks: SwarmTaskSpec[] = [{ id: 'a', agent: { model: slow }, input: 'task a' }, { id: 'b', agent: { model: base }, input: 'task b', dependsOn: ['a'] }];
    const leg = runAgentGroup({ session, tasks, abortSignal: controller.signal });
    setTimeout(release, 20);
    const first = await leg;
    expect(first.status).toBe('interrupted');
    expect(first.tasks.b!.status).toBe('pending');
    const next = await runAgentGroup({ session, tasks });
    expect(next.tasks.a!.status).toBe('stopped');
    expect(next.tasks.b!.status).toBe('skipped');
    expect(next.status).toBe('failed');
  });
});

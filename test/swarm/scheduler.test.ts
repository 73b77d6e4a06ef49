/**
 * runAgentGroup on the in-memory store: a DAG runs in dependency order with
 * bounded concurrency, tasks share the blackboard, a task spawns another, the
 * journal records each control event, and the run ids are the tasks'.
 */
import { describe, expect, it } from 'vitest';
import { createExecutionContext } from 'cairn/policy';
import { createInMemorySwarmStore, runAgentGroup, resumeAgentGroup, SwarmError, taskRunId, type SwarmTaskSpec } from 'cairn/swarm';
import { planModel } from './helpers.js';

const session = (store = createInMemorySwarmStore(), swarmId = 's1') => ({ store, swarmId, scope: 'tenant-a' });

describe('runAgentGroup', () => {
  it('runs a DAG in dependency order, each task a durable run under <swarmId>.<taskId>', async () => {
    const model = planModel(() => []);
    const started: string[] = [];
    const s = session();
    const tasks: SwarmTaskSpec[] = [
      { id: 'a', agent: { model }, input: 'task a' },
      { id: 'b', agent: { model }, input: 'task b', dependsOn: ['a'] },
      { id: 'c', agent: { model }, input: (deps) => `task c after ${deps.a!.text} and ${deps.b!.text}`, dependsOn: ['a', 'b'] },
    ];
    const result = await runAgentGroup({ session: s, tasks, clock: { now: () => 1000 } });
    expect(result.status).toBe('completed');
    for (const id of ['a', 'b', 'c']) {
      expect(result.tasks[id]!.status).toBe('completed');
      expect(result.tasks[id]!.runId).toBe(taskRunId('s1', id));
      const envelope = await s.store.runs.load(`s1.${id}`, { scope: 'tenant-a' });
      expect(envelope?.status).toBe('completed');
    }
    expect(result.tasks.c!.result?.text).toBe('done: task c after done: task a and done: task b');
    const journal = await s.store.readJournal('s1');
    for (const e of journal) started.push(`${e.type}${e.taskId ? `:${e.taskId}` : ''}`);
    expect(started).toEqual([
      'swarm-started', 'task-ready:a', 'task-started:a',
      'task-completed:a', 'task-ready:b', 'task-started:b',
      'task-completed:b', 'task-ready:c', 'task-started:c',
      'task-completed:c', 'swarm-completed',
    ]);
    expect(journal.map((e) => e.seq)).toEqual(journal.map((_, i) => i + 1));
    // A second call answers from the store: nothing runs again.
    const calls = model.calls;
    const again = await runAgentGroup({ session: s, tasks });
    expect(again.status).toBe('completed');
    expect(model.calls).toBe(calls);
  });

  it('runs at most `concurrency` tasks at once', async () => {
    let running = 0;
    let most = 0;
    const slow = {
      ...planModel(() => []),
      async doGenerate() {
        running += 1;
        most = Math.max(most, running);
        await new Promise((r) => setTimeout(r, 5));
        running -= 1;
        return { text: 'ok', toolCalls: [], finishReason: 'stop' as const, usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } };
      },
    };
    const tasks = Array.from({ length: 6 }, (_, i) => ({ id: `t${i}`, agent: { model: slow }, input: `t${i}` }));
    const result = await runAgentGroup({ session: session(), tasks, concurrency: 2 });
    expect(result.status).toBe('completed');
    expect(most).toBe(2);
  });

  it('shares the blackboard; a task spawns another that runs under the swarm', async () => {
    const model = planModel((prompt) => {
      if (prompt === 'write') return [{ toolName: 'blackboard_write', args: { key: 'facts', value: { n: 42 } } }];
      if (prompt === 'plan') return [{ toolName: 'spawn_task', args: { taskId: 'extra', agent: 'helper', prompt: 'read' } }];
      if (prompt === 'read') return [{ toolName: 'blackboard_read', args: { key: 'facts' } }];
      return [];
    });
    const s = session();
    const result = await runAgentGroup({
      session: s,
      agents: { helper: { model } },
      tasks: [
        { id: 'writer', agent: { model }, input: 'write' },
        { id: 'planner', agent: { model }, input: 'plan', dependsOn: ['writer'] },
      ],
    });
    expect(result.status).toBe('completed');
    expect(result.tasks.extra).toMatchObject({ status: 'completed', spawnedBy: 'planner', runId: 's1.extra' });
    const board = await s.store.readBlackboard('s1');
    expect(board).toEqual([expect.objectContaining({ key: 'facts', value: { n: 42 }, version: 1, taskId: 'writer' })]);
    const read = result.tasks.extra!.result!.messages.find((m) => m.role === 'tool');
    expect(JSON.stringify(read)).toContain('"n":42');
    const types = (await s.store.readJournal('s1')).map((e) => e.type);
    expect(types).toContain('blackboard-written');
    expect(types.indexOf('spawned')).toBeLessThan(types.lastIndexOf('task-started'));
  });

  it('refuses a bad DAG with a typed error and writes nothing', async () => {
    const model = planModel(() => []);
    const cases: Array<[SwarmTaskSpec[], string]> = [
      [[{ id: 'a', agent: { model }, input: 'x', dependsOn: ['b'] }, { id: 'b', agent: { model }, input: 'y', dependsOn: ['a'] }], 'cycle'],
      [[{ id: 'a', agent: { model }, input: 'x', dependsOn: ['zzz'] }], 'missing-dependency'],
      [[{ id: 'a', agent: { model }, input: 'x' }, { id: 'a', agent: { model }, input: 'y' }], 'duplicate-task'],
      [[{ id: 'a.b', agent: { model }, input: 'x' }], 'invalid-task'],
      [[{ id: 'a', agent: 'nobody', input: 'x' }], 'unknown-agent'],
    ];
    for (const [tasks, problem] of cases) {
      const s = session();
      const error = await runAgentGroup({ session: s, tasks }).catch((e) => e);
      expect(SwarmError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ code: 'swarm_dag_invalid', problem });
      expect(await s.store.loadSwarm('s1', { scope: 'tenant-a' })).toBeUndefined();
      expect(await s.store.readJournal('s1')).toEqual([]);
    }
    expect(model.calls).toBe(0);
  });

  it('refuses a task policy that widens the swarm\'s, and a resume of nothing', async () => {
    const model = planModel(() => []);
    const execution = createExecutionContext({ budget: { usd: 1 } });
    const widened = await runAgentGroup({ session: session(), execution, tasks: [{ id: 'a', agent: { model }, input: 'x', policy: { budget: { usd: 5 } } }] }).catch((e) => e);
    expect(widened).toMatchObject({ code: 'policy_widened' });
    const none = await resumeAgentGroup({ session: session(), tasks: [] }).catch((e) => e);
    expect(none).toMatchObject({ code: 'swarm_not_found' });
    expect(model.calls).toBe(0);
  });

  it('refuses a resume whose tasks differ from the stored ones', async () => {
    const model = planModel(() => []);
    const s = session();
    await runAgentGroup({ session: s, tasks: [{ id: 'a', agent: { model }, input: 'x' }] });
    const error = await runAgentGroup({ session: s, tasks: [{ id: 'a', agent: { model }, input: 'other' }] }).catch((e) => e);
    expect(error).toMatchObject({ code: 'swarm_definition_changed' });
  });
});

describe('runAgentGroup with Agents', () => {
  it('runs an Agent as a task, and refuses an agent that brings its own session, execution or a swarm tool name', async () => {
    const { Agent } = await import('cairn');
    const model = planModel(() => []);
    const agent = new Agent({ model, instructions: 'Be brief.' });
    const store = createInMemorySwarmStore();
    const result = await runAgentGroup({ session: { store, swarmId: 'ag', scope: 't' }, tasks: [{ id: 'one', agent, input: 'hello' }] });
    expect(result.status).toBe('completed');
    expect(result.tasks.one!.result?.text).toBe('done: hello');
    const own = { model, execution: createExecutionContext() };
    await expect(runAgentGroup({ session: session(), tasks: [{ id: 'a', agent: own as never, input: 'x' }] })).rejects.toMatchObject({ code: 'invalid_options' });
    const clash = { model, tools: { blackboard_read: { parameters: { type: 'object' }, execute: async () => 1 } } };
    await expect(runAgentGroup({ session: session(), tasks: [{ id: 'a', agent: clash, input: 'x' }] })).rejects.toMatchObject({ code: 'invalid_options' });
    expect(model.calls).toBe(1);
  });
});

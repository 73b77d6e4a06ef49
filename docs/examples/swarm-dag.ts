// A two-task DAG on SQLite: research writes facts to the blackboard, write reads them and spawns a review task.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createExecutionContext } from 'cairn/policy';
import { runAgentGroup } from 'cairn/swarm';
import { createSqliteSwarmStore } from 'cairn/swarm/sqlite';
import { createMockModel } from 'cairn/testing';

const dir = mkdtempSync(join(tmpdir(), 'cairn-swarm-'));
const store = createSqliteSwarmStore({ path: join(dir, 'swarm.sqlite') });

const researcher = {
  model: createMockModel({
    responses: [
      { toolCalls: [{ toolName: 'blackboard_write', args: { key: 'facts', value: ['revenue up 12%', 'churn down to 2%'] } }] },
      { text: 'The facts are on the blackboard.' },
    ],
  }),
};
const writer = {
  model: createMockModel({
    responses: [
      {
        toolCalls: [
          { toolName: 'blackboard_read', args: { key: 'facts' } },
          { toolName: 'spawn_task', args: { taskId: 'review', agent: 'reviewer', prompt: 'Check the summary.' } },
        ],
      },
      { text: 'Q3: revenue up 12%, churn down to 2%.' },
    ],
  }),
};
const reviewer = { model: createMockModel({ responses: [{ text: 'The summary matches the facts.' }] }) };

const options = {
  session: { store, swarmId: 'q3-report', scope: 'acme' },
  execution: createExecutionContext({ budget: { tokens: 100_000 } }),
  agents: { reviewer },
  tasks: [
    { id: 'research', agent: researcher, input: 'Collect the Q3 facts.' },
    { id: 'write', agent: writer, input: 'Write the Q3 summary.', dependsOn: ['research'] },
  ],
};
const result = await runAgentGroup(options);
console.log(`swarm: ${result.status}`);
for (const task of Object.values(result.tasks)) {
  console.log(`${task.taskId} (run ${task.runId}${task.spawnedBy ? `, spawned by ${task.spawnedBy}` : ''}): ${task.status}: ${task.result?.text}`);
}
for (const event of await store.readJournal('q3-report')) {
  console.log(`${event.seq} ${event.type}${event.taskId ? ` ${event.taskId}` : ''}`);
}
console.log(`blackboard: ${JSON.stringify((await store.readBlackboard('q3-report')).map((e) => [e.key, e.version, e.taskId]))}`);

// The same call again answers from the store: every task ended, so no model is called (a scripted model would throw).
const again = await runAgentGroup(options);
console.log(`again: ${again.status}, ${Object.keys(again.tasks).length} tasks`);
store.close();
rmSync(dir, { recursive: true, force: true });

// Two store objects on one SQLite file stand in for two workers: their runs spend from one named ledger.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runAgent } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createExecutionContext } from 'cairn/policy';
import { createMockModel } from 'cairn/testing';

const dir = mkdtempSync(join(tmpdir(), 'cairn-ledger-'));
const workers = [createSqliteOpsStore({ path: join(dir, 'ops.sqlite') }), createSqliteOpsStore({ path: join(dir, 'ops.sqlite') })];
const contextOf = (ops: (typeof workers)[number]) => createExecutionContext({
  ledger: ops.budgets.ledger('team-a'),
  prices: { 'mock:mock-model': { input: 1, output: 2 } },
  budget: { usd: 0.007, estimate: { inputTokens: 1000, outputTokens: 1000 } },
});
for (let i = 0; i < 4; i++) {
  const ops = workers[i % 2]!;
  const result = await runAgent({
    model: createMockModel({ responses: [{ text: 'Done.', usage: { inputTokens: 1000, outputTokens: 500 } }] }),
    prompt: `Task ${i}.`,
    // Each run under a child of its own: its record keeps its slice, the shared ledger the rest.
    execution: contextOf(ops).child({ name: `task-${i}` }),
    session: { store: ops.agentRuns, runId: `task-${i}`, scope: 'team-a' },
  });
  console.log(`task-${i} on worker ${i % 2}: ${result.status}${result.status === 'stopped' ? ` (${result.reason})` : ''}`);
}
console.log(JSON.stringify(await contextOf(workers[0]!).accounting()));
for (const ops of workers) ops.close();
rmSync(dir, { recursive: true, force: true });

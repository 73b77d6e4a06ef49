/**
 * The sub-agent records of the compatibility corpus (corpus/sub-agent-v3/,
 * written by generate-sub-agent.ts): a lead suspended on its sub-agent's
 * approval and the suspended child, put back into a fresh store (in memory,
 * and a SQLite file) and resumed by the current code with the approval. The
 * child's lookup runs once, the child completes, the lead answers.
 *
 * The files are never edited (see corpus/README.md).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, type AgentRunEnvelope, type AgentRunStore } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { SECOND_LEG, SUB_AGENT_ROOT_ID, SUB_AGENT_SCOPE, subAgentAgents } from './sub-agent-agent.js';

const folder = fileURLToPath(new URL('./corpus/sub-agent-v3/', import.meta.url));
const read = (name: string) => JSON.parse(readFileSync(join(folder, name), 'utf8')) as AgentRunEnvelope;

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

const STORES: { name: string; open(records: AgentRunEnvelope[]): Promise<AgentRunStore> }[] = [
  { name: 'in-memory', open: async (records) => createInMemoryAgentRunStore(records) },
  {
    name: 'sqlite',
    open: async (records) => {
      const dir = mkdtempSync(join(tmpdir(), 'cairn-compat-sub-'));
      const ops = createSqliteOpsStore({ path: join(dir, 'runs.db') });
      cleanups.push(() => {
        ops.close();
        rmSync(dir, { recursive: true, force: true });
      });
      for (const record of records) await ops.agentRuns.save({ ...record, revision: 1 });
      return ops.agentRuns;
    },
  },
];

describe.each(STORES)('sub-agent records of the corpus ($name store)', (backend) => {
  it('a lead suspended on its child\'s approval goes on: the child runs its lookup once and completes, the lead answers', async () => {
    const root = read('root.json');
    const child = read('child.json');
    expect(root).toMatchObject({ status: 'suspended', version: 2 });
    expect(child.binding.parent).toMatchObject({ runId: SUB_AGENT_ROOT_ID, depth: 1 });
    const store = await backend.open([root, child]);
    const [pending] = root.pendingApprovals;
    expect(pending).toMatchObject({ toolName: 'archive', runId: child.runId });
    const effects: string[] = [];
    const done = await subAgentAgents(SECOND_LEG, effects).run({
      runId: SUB_AGENT_ROOT_ID, scope: SUB_AGENT_SCOPE, store,
      approvalResponses: [{ approvalId: pending!.approvalId, approved: true, token: pending!.token }],
    });
    expect(done.status).toBe('completed');
    expect(done.outputText).toBe('Because of the moon.');
    expect(effects).toEqual(['tides']);
    expect((await store.load(child.runId, { scope: SUB_AGENT_SCOPE }))!.status).toBe('completed');
  });
});

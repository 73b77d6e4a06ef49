/**
 * Sub-agents on PostgreSQL: the child is a run in the same store and scope,
 * its approval suspends the root, and a resume from a new store object (as a
 * new process would open) reaches the child and runs its effect once.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPostgresOpsStore, type PostgresOpsStore } from 'cairn/ops/postgres';
import { createMockModel } from 'cairn/testing';
import { describePostgres } from '../stores/pg-env.js';
import { leadScript, researcherScript, world } from './sub-agent-helpers.js';

describePostgres('sub-agents on postgres', (env) => {
  const opened: PostgresOpsStore[] = [];
  let schema = '';
  const open = () => {
    const ops = createPostgresOpsStore({ connectionString: env.url }, { schema });
    opened.push(ops);
    return ops;
  };
  beforeAll(async () => {
    schema = env.newSchema();
    await open().setup();
  });
  afterAll(async () => {
    for (const ops of opened) await ops.close();
  });

  it("a child's approval suspends the root; a resume from another store object runs the child's effect once", async () => {
    const w = world({ gated: true });
    const store = open().agentRuns;
    const first = await w.lead(leadScript(), w.researcher(researcherScript())).run({ prompt: 'Explain tides.', store, runId: 'pg-root', scope: 'tenant-a' });
    expect(first.status).toBe('suspended');
    const [pending] = first.pendingApprovals;
    const childId = (await store.load('pg-root', { scope: 'tenant-a' }))!.pendingApprovals[0]!.runId!;
    expect((await store.load(childId, { scope: 'tenant-a' }))!.binding.parent).toMatchObject({ runId: 'pg-root', depth: 1 });
    const later = open().agentRuns;
    const second = await w.lead(createMockModel({ responses: [{ text: 'Because of the moon.' }] }), w.researcher(createMockModel({ responses: [{ text: 'Tides follow the moon.' }] })))
      .run({ runId: 'pg-root', scope: 'tenant-a', store: later, approvalResponses: [{ approvalId: pending!.approvalId, approved: true, token: pending!.token }] });
    expect(second.status).toBe('completed');
    expect(second.outputText).toBe('Because of the moon.');
    expect(w.effects).toEqual(['tides']);
    expect((await later.load(childId, { scope: 'tenant-a' }))!.status).toBe('completed');
  });
});

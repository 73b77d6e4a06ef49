/**
 * A SQLite store object's save of a running run it saved running one
 * revision before is planned before its transaction and written by one
 * update guarded by what that save left (the row's number, run id, scope,
 * status, revision, digests and head length). Where the row is no longer
 * that, the save reads the row and is checked as any other: a revision
 * written by another object is a conflict, a scope changed under it is
 * refused, and a digest edited by hand is what the save extends.
 */
import { describe, expect, it } from 'vitest';
import { runAgent, type AgentRunEnvelope, type AgentRunStore, type AgentTool } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { sqliteScratch } from './sqlite-scratch.js';

const { file, open, raw } = sqliteScratch('cairn-sqlite-guarded-');

const json = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;
const step: AgentTool = { parameters: { type: 'object' }, execute: (args: { n: number }) => ({ ok: true, n: args.n }) };

/** The envelopes a 3-step tool loop saves, as JSON copies (each a plain envelope a store may be handed again). */
async function recorded(runId: string): Promise<AgentRunEnvelope[]> {
  const envelopes: AgentRunEnvelope[] = [];
  const store: AgentRunStore = { load: async () => undefined, save: async (envelope) => void envelopes.push(json(envelope)) };
  const turns = Array.from({ length: 3 }, (_, n) => ({ toolCalls: [{ toolName: 'step', args: { n }, toolCallId: `c${n}` }] }));
  const result = await runAgent({
    model: createMockModel({ responses: [...turns, { text: 'done' }] }), prompt: 'Work.', tools: { step }, maxSteps: 6,
    session: { store, runId, scope: 'tenant-a' },
  });
  expect(result.status).toBe('completed');
  return envelopes;
}

describe('a SQLite save planned from the last one', () => {
  it('writes each envelope exactly while nobody else writes: another object loads every save as saved', async () => {
    const path = file('ops.sqlite');
    const writer = open(path);
    const reader = open(path);
    const envelopes = await recorded('guarded');
    expect(envelopes.length).toBeGreaterThan(4);
    for (const envelope of envelopes) {
      await writer.agentRuns.save(envelope);
      expect(JSON.stringify(await reader.agentRuns.load('guarded'))).toBe(JSON.stringify(envelope));
    }
  });

  it('a revision another object wrote in between is a conflict, and the save after it goes on from the row', async () => {
    const path = file('ops.sqlite');
    const a = open(path);
    const b = open(path);
    const envelopes = await recorded('shared');
    await a.agentRuns.save(envelopes[0]!);
    await a.agentRuns.save(envelopes[1]!);
    await b.agentRuns.save(envelopes[2]!);
    // a's last save left revision 2, and this is revision 3: planned ahead, and refused by the row's revision.
    await expect(a.agentRuns.save(envelopes[2]!)).rejects.toMatchObject({ name: 'RevisionConflictError' });
    await a.agentRuns.save(envelopes[3]!);
    await a.agentRuns.save(envelopes[4]!);
    expect(JSON.stringify(await b.agentRuns.load('shared'))).toBe(JSON.stringify(envelopes[4]));
  });

  it('a scope changed under the row is refused, not written', async () => {
    const path = file('ops.sqlite');
    const ops = open(path);
    const envelopes = await recorded('moved');
    await ops.agentRuns.save(envelopes[0]!);
    await ops.agentRuns.save(envelopes[1]!);
    const db = raw(path);
    db.prepare("UPDATE cairn_runs SET scope = 'tenant-b' WHERE run_id = 'moved'").run();
    await expect(ops.agentRuns.save(envelopes[2]!)).rejects.toMatchObject({ name: 'RunIdentityError', code: 'scope_mismatch' });
    expect(db.prepare<[], { revision: number }>("SELECT revision FROM cairn_runs WHERE run_id = 'moved'").get()!.revision).toBe(2);
  });

  it('extends the digest the row holds, not the one it remembers: a digest edited by hand stays wrong and the load refuses the run', async () => {
    const path = file('ops.sqlite');
    const ops = open(path);
    const envelopes = await recorded('edited');
    await ops.agentRuns.save(envelopes[0]!);
    await ops.agentRuns.save(envelopes[1]!);
    const db = raw(path);
    db.prepare("UPDATE cairn_runs SET transcript_digest = zeroblob(length(transcript_digest)) WHERE run_id = 'edited'").run();
    await ops.agentRuns.save(envelopes[2]!);
    // Planned from memory and written without the guard, the save would have made the digest right again.
    await expect(open(path).agentRuns.load('edited')).rejects.toMatchObject({ name: 'StoredRecordError', code: 'record_corrupt' });
  });
});

/**
 * replayRun: the stored history driven through the pure machines reaches the
 * stored snapshot for every record of the compatibility corpus (after its
 * migration), and a planted non-determinism or an edited record is caught
 * where it first goes elsewhere. (The crash property replays every run it
 * leaves in its stores as well: test/property.)
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, runAgent, type AgentRunEnvelope } from 'cairn/agent';
import { replayRun, RUN_MACHINE_VERSION, runMachine } from 'cairn/machines';
import { createMockModel } from 'cairn/testing';

const CORPUS = fileURLToPath(new URL('../compat/corpus/', import.meta.url));
const corpus = readdirSync(CORPUS).filter((d) => /^run-v\d+$/.test(d)).flatMap((version) =>
  readdirSync(join(CORPUS, version)).filter((f) => f.endsWith('.json')).map((file) => ({
    name: `${version}/${file}`, version: Number(version.slice(5)), text: readFileSync(join(CORPUS, version, file), 'utf8'),
  })));
const load = (name: string) => JSON.parse(corpus.find((c) => c.name === name)!.text) as AgentRunEnvelope;

describe('replayRun on the compatibility corpus', () => {
  for (const fixture of corpus) {
    it(`replays ${fixture.name} to its stored snapshot`, () => {
      const envelope = JSON.parse(fixture.text) as AgentRunEnvelope;
      const report = replayRun(envelope);
      expect(report.divergence).toBeNull();
      expect(report).toMatchObject({ reached: true, storedVersion: fixture.version });
      expect(report.turns).toBeGreaterThan(0);
      // Nothing of the record was changed by the replay.
      expect(JSON.stringify(envelope)).toBe(JSON.stringify(JSON.parse(fixture.text)));
    });
  }
});

describe('what replay catches', () => {
  it('a machine whose guard keeps hidden state: the run stops where the record went on', () => {
    let asked = 0;
    // Planted: the step budget check answers differently the second time it is asked, whatever the run says.
    const planted = runMachine.provide({ guards: { stepsLeft: ({ context }: { context: { step: number; maxSteps: number } }) => context.step < context.maxSteps && asked++ === 0 } as never });
    const report = replayRun(load('run-v2/completed.json'), { machines: { run: planted } });
    expect(report.reached).toBe(false);
    expect(report.divergence).toMatchObject({ step: 1, message: 'The replay ended in another state than the record.' });
    expect(report.divergence!.path).not.toBeNull();
    // The same record with the machine as shipped replays.
    expect(replayRun(load('run-v2/completed.json')).reached).toBe(true);
  });

  it('an edited transcript: the first message the machines would not have written', () => {
    const envelope = load('run-v2/completed.json');
    const context = (envelope.snapshot as { context: { messages: { role: string; content: unknown }[] } }).context;
    const tool = context.messages.findIndex((m) => m.role === 'tool');
    context.messages[tool] = { ...context.messages[tool]!, content: 'a result nobody returned' };
    const report = replayRun(envelope);
    expect(report.reached).toBe(false);
    // The record says one thing; the receipt, which the machines answer from, another.
    expect(report.divergence).toMatchObject({ path: `messages[${tool}].content`, expected: 'a result nobody returned', found: { orderId: '7', status: 'packed' } });
  });

  it('replays a live run suspended on an approval, and the run once it completed', async () => {
    const store = createInMemoryAgentRunStore();
    const tools = {
      pay: { description: 'Pay.', parameters: { type: 'object', properties: {} }, needsApproval: true, execute: () => 'paid' },
      look: { description: 'Look.', parameters: { type: 'object', properties: {} }, execute: () => ({ seen: true }) },
    };
    const model = createMockModel({
      responses: [
        { toolCalls: [{ toolName: 'look', toolCallId: 'l1' }] },
        { toolCalls: [{ toolName: 'pay', toolCallId: 'p1' }, { toolName: 'look', toolCallId: 'l2' }] },
        { text: 'Paid.' },
      ],
    });
    const session = { store, runId: 'live', scope: 's' };
    const first = await runAgent({ model, prompt: 'Pay.', tools, session });
    if (first.status !== 'suspended') throw new Error(first.status);
    const suspendedReplay = replayRun((await store.load('live'))!);
    expect(suspendedReplay.divergence).toBeNull();
    expect(suspendedReplay).toMatchObject({ reached: true, turns: 2 });
    const { resumeAgent } = await import('cairn/agent');
    const done = await resumeAgent({
      model, tools, session,
      approvalResponses: [{ approvalId: first.pendingApprovals[0]!.approvalId, token: first.pendingApprovals[0]!.token, approved: true }],
    });
    expect(done.status).toBe('completed');
    expect(replayRun((await store.load('live'))!)).toMatchObject({ reached: true, turns: 3, divergence: null });
  });

  it('refuses a record of a machine newer than this reader', () => {
    const envelope = load('run-v2/completed.json');
    expect(() => replayRun({ ...envelope, machine: { ...envelope.machine, version: RUN_MACHINE_VERSION + 1 } }))
      .toThrow(expect.objectContaining({ code: 'checkpoint_version_unsupported' }));
    expect(() => replayRun(null as never)).toThrow(expect.objectContaining({ code: 'invalid_envelope' }));
  });
});

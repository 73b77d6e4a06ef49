/**
 * "When the store fails": the four places a write can fail, each injected by a
 * store whose Nth save rejects, then resumed through a healthy store object.
 */
import { describe, expect, it } from 'vitest';
import {
  createInMemoryAgentRunStore, PersistenceError, resumeAgent, runAgent, type AgentRunEnvelope, type AgentRunStore,
} from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const clock = { now: () => 7_000 };

/** Saves go through until the Nth, which rejects without landing. */
function failingAt(inner: AgentRunStore, n: number): AgentRunStore & { attempts: AgentRunEnvelope[] } {
  const attempts: AgentRunEnvelope[] = [];
  return {
    attempts,
    load: (id) => inner.load(id),
    async save(envelope) {
      attempts.push(JSON.parse(JSON.stringify(envelope)));
      if (attempts.length === n) throw Object.assign(new Error('disk full'), { code: 'injected_fault' });
      return inner.save(envelope);
    },
  };
}

function scenario(store: AgentRunStore, runs: { charge: number }, script?: Parameters<typeof createMockModel>[0]['responses']) {
  return {
    model: createMockModel({ responses: script ?? [
      { toolCalls: [{ toolName: 'charge', args: { order: 7 } }] },
      { text: 'Charged.' },
    ] }),
    prompt: 'Charge order 7.',
    session: { store, runId: 'order-7', scope: 'tenant-a' },
    // A scripted 503 fails the call at once instead of being retried.
    maxRetries: 0,
    deps: { clock },
    tools: { charge: { parameters: { type: 'object' as const }, execute: () => { runs.charge++; return 'charged'; } } },
  };
}

/** Which save of a run with one tool call records what. */
async function saveLabels(): Promise<string[]> {
  const inner = createInMemoryAgentRunStore();
  const store = failingAt(inner, Number.POSITIVE_INFINITY);
  await runAgent(scenario(store, { charge: 0 }));
  return store.attempts.map((e) => {
    const receipt = Object.values(e.receipts)[0];
    return `${JSON.stringify((e.snapshot as { value: unknown }).value)} receipt=${receipt?.status ?? 'none'} status=${e.status}`;
  });
}

describe('when the store fails', () => {
  it('the saves of a one-call run are: start, executing (with the turn), step (with the raw result), terminal (with the answer)', async () => {
    const labels = await saveLabels();
    expect(labels).toHaveLength(4);
    expect(labels[1]).toContain('receipt=executing');
    // The turn is in the executing save: a restore from it replays the turn.
    expect(labels[1]).toContain('awaitingCalls');
    expect(labels[2]).toContain('receipt=completed');
    expect(labels.at(-1)).toContain('status=completed');
  });

  it('a run\'s answer is committed in the save that completes it, not in one of its own', async () => {
    const inner = createInMemoryAgentRunStore();
    const store = failingAt(inner, Number.POSITIVE_INFINITY);
    const result = await runAgent(scenario(store, { charge: 0 }, [{ text: 'Nothing to charge.' }]));
    expect(result).toMatchObject({ status: 'completed', output: 'Nothing to charge.' });
    // Two saves: the start, then the answer with the completed run (three before: the answer had a save of its own).
    expect(store.attempts.map((e) => e.status)).toEqual(['running', 'completed']);
    const [start, end] = store.attempts.map((e) => (e.snapshot as { context: { messages: unknown[] } }).context.messages);
    expect(start!.at(-1)).toMatchObject({ role: 'user' });
    expect(end!.at(-1)).toMatchObject({ role: 'assistant', content: 'Nothing to charge.' });
    expect(store.attempts[1]).toMatchObject({ result: { status: 'completed', output: 'Nothing to charge.' } });
  });

  it('a tool whose result is validated or projected commits its raw result first, in a save of its own', async () => {
    const inner = createInMemoryAgentRunStore();
    const store = failingAt(inner, Number.POSITIVE_INFINITY);
    const base = scenario(store, { charge: 0 });
    await runAgent({ ...base, tools: { charge: { ...base.tools.charge, toModelOutput: (r: string) => r.toUpperCase() } } });
    const receipts = store.attempts.map((e) => Object.values(e.receipts)[0]?.status ?? 'none');
    expect(receipts).toEqual(['none', 'executing', 'executed', 'completed', 'completed']);
  });

  it('before the effect: the executing receipt is not written, the tool never ran, a resume replays the step', async () => {
    const inner = createInMemoryAgentRunStore();
    const runs = { charge: 0 };
    const first = await runAgent(scenario(failingAt(inner, 2), runs));
    expect(first.status).toBe('failed');
    if (first.status === 'failed') expect(first.error.code).toBe('persistence_failed');
    expect(runs.charge).toBe(0);
    // The last checkpoint is the one before the model turn (the turn was to be saved with the receipt): the step runs again from there.
    expect(Object.keys((await inner.load('order-7'))!.receipts)).toEqual([]);
    const resumed = await resumeAgent(scenario(inner, runs));
    expect(resumed.status).toBe('completed');
    expect(runs.charge).toBe(1);
  });

  it('between the effect and its receipt: the resume stops for reconciliation and writes nothing', async () => {
    const inner = createInMemoryAgentRunStore();
    const runs = { charge: 0 };
    // The step checkpoint is the first save after the effect (this tool has no projection for the raw result to precede).
    const first = await runAgent(scenario(failingAt(inner, 3), runs));
    expect(first.status).toBe('failed');
    expect(runs.charge).toBe(1);
    const before = JSON.stringify(await inner.load('order-7'));
    const resumed = await resumeAgent(scenario(inner, runs, []));
    expect(resumed.status).toBe('stopped');
    if (resumed.status !== 'stopped') return;
    expect(resumed.reason).toBe('tool-reconciliation-required');
    expect(resumed.unknownEffects?.map((r) => [r.toolName, r.status])).toEqual([['charge', 'executing']]);
    expect(JSON.stringify(await inner.load('order-7'))).toBe(before);
    expect(runs.charge).toBe(1);
    // The spec's reconciliation: it landed, so record its output; nothing runs again.
    const reconciled = await resumeAgent({
      ...scenario(inner, runs, [{ text: 'Charged.' }]),
      reconciledToolResults: resumed.unknownEffects!.map((r) => ({ toolCallId: r.toolCallId, output: 'charged' })),
    });
    expect(reconciled.status).toBe('completed');
    expect(runs.charge).toBe(1);
    const stored = await inner.load('order-7');
    expect(Object.values(stored!.receipts)[0]).toMatchObject({ status: 'completed', reconciled: true, rawResult: 'charged' });
  });

  it('after the completed receipt: a failed terminal save leaves the step; a resume asks the model again and answers', async () => {
    const inner = createInMemoryAgentRunStore();
    const runs = { charge: 0 };
    // Saves: start, executing, step (with the result), terminal with the answer (fails).
    const first = await runAgent(scenario(failingAt(inner, 4), runs));
    expect(first.status).toBe('failed');
    if (first.status === 'failed') expect(first.error.code).toBe('persistence_failed');
    // The answer was not committed: the record is the step's checkpoint, its last message the tool's result.
    const left = await inner.load('order-7');
    expect(left!.status).toBe('running');
    expect((left!.snapshot as { context: { messages: unknown[] } }).context.messages.at(-1)).toMatchObject({ role: 'tool', content: 'charged' });
    const model = createMockModel({ responses: [{ text: 'Charged.' }] });
    const resumed = await resumeAgent({ ...scenario(inner, runs), model });
    expect(resumed).toMatchObject({ status: 'completed', output: 'Charged.' });
    expect(runs.charge).toBe(1);
    // The model saw the recorded result.
    expect(model.calls).toHaveLength(1);
    expect(model.calls[0]!.messages.at(-1)).toMatchObject({ role: 'tool', content: 'charged' });
    expect(await inner.load('order-7')).toMatchObject({ status: 'completed', result: { status: 'completed', output: 'Charged.' } });
  });

  it('after the raw result, before the step checkpoint: a resume projects the recorded result again, the tool does not run again', async () => {
    const inner = createInMemoryAgentRunStore();
    const runs = { charge: 0 };
    const projecting = (store: AgentRunStore, script?: Parameters<typeof createMockModel>[0]['responses']) => {
      const base = scenario(store, runs, script);
      return { ...base, tools: { charge: { ...base.tools.charge, toModelOutput: (r: string) => r.toUpperCase() } } };
    };
    // Saves: start, executing, executed (the raw result), step (fails).
    const first = await runAgent(projecting(failingAt(inner, 4)));
    expect(first.status).toBe('failed');
    expect(Object.values((await inner.load('order-7'))!.receipts)[0]).toMatchObject({ status: 'executed', rawResult: 'charged' });
    const model = createMockModel({ responses: [{ text: 'Charged.' }] });
    const resumed = await resumeAgent({ ...projecting(inner), model });
    expect(resumed.status).toBe('completed');
    expect(runs.charge).toBe(1);
    expect(model.calls[0]!.messages.at(-1)).toMatchObject({ role: 'tool', content: 'CHARGED' });
  });

  it('after a resume settled the calls: its answers were saved before the model call, nothing is settled again', async () => {
    const inner = createInMemoryAgentRunStore();
    const runs = { charge: 0 };
    const gated = (store: AgentRunStore, script: Parameters<typeof createMockModel>[0]['responses']) => {
      const base = scenario(store, runs, script);
      return { ...base, tools: { charge: { ...base.tools.charge, needsApproval: true } } };
    };
    const first = await runAgent(gated(inner, [{ toolCalls: [{ toolName: 'charge', args: { order: 7 } }] }]));
    expect(first.status).toBe('suspended');
    if (first.status !== 'suspended') return;
    const approvalResponses = first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true }));
    // The resume's model call fails after the settle's answers were saved.
    const failed = await resumeAgent({ ...gated(inner, [{ error: { status: 503 } }]), approvalResponses });
    expect(failed.status).toBe('failed');
    expect(runs.charge).toBe(1);
    // No verdict needed again: the retry goes on from the saved answers.
    const retried = await resumeAgent({ ...gated(inner, [{ text: 'Charged.' }]), retryFailed: true });
    expect(retried.status).toBe('completed');
    expect(runs.charge).toBe(1);
  });

  it('a failed write after a verdict leaves the run in finalizing; the resume verifies again as a new attempt', async () => {
    const inner = createInMemoryAgentRunStore();
    let verifications = 0;
    const options = (store: AgentRunStore, maxVerifyAttempts: number) => ({
      model: createMockModel({ responses: [{ text: '{"answer":42}' }] }),
      prompt: 'Answer.',
      session: { store, runId: 'v1', scope: 's' },
      deps: { clock },
      maxVerifyAttempts,
      output: { schema: { type: 'object' }, validate: (v: unknown) => v as { answer: number } },
      verify: () => {
        verifications++;
        return { status: 'verified' as const };
      },
    });
    // Saves: start, turn, attempt count, terminal (fails).
    const first = await runAgent(options(failingAt(inner, 4), 2));
    expect(first.status).toBe('failed');
    expect(verifications).toBe(1);
    const stored = await inner.load('v1');
    expect((stored!.snapshot as { value: unknown }).value).toEqual({ verifying: 'beginning' });
    const resumed = await resumeAgent(options(inner, 2));
    expect(resumed.status).toBe('completed');
    expect(verifications).toBe(2);

    // With one attempt allowed, the repeat has none left.
    const inner2 = createInMemoryAgentRunStore();
    verifications = 0;
    expect((await runAgent(options(failingAt(inner2, 4), 1))).status).toBe('failed');
    const exhausted = await resumeAgent(options(inner2, 1));
    expect(exhausted.status).toBe('stopped');
    if (exhausted.status === 'stopped') expect(exhausted.reason).toBe('verification-attempts-exhausted');
    expect(verifications).toBe(1);
  });
});

describe('the error a failed save reports', () => {
  it('names the run once: a store that throws a PersistenceError of its own is passed on as it is', async () => {
    const inner = createInMemoryAgentRunStore();
    const store: AgentRunStore = {
      load: (id) => inner.load(id),
      async save() {
        throw new PersistenceError('Saving run r-1 failed: connection terminated.');
      },
    };
    const result = await runAgent({ model: createMockModel({ responses: [{ text: 'x' }] }), prompt: 'x', session: { store, runId: 'r-1', scope: 's' } });
    expect(result.status).toBe('failed');
    if (result.status === 'failed') {
      expect(result.error).toEqual({ name: 'PersistenceError', code: 'persistence_failed', message: 'Saving run r-1 failed: connection terminated.' });
    }
  });

  it('wraps any other store error once, naming the run', async () => {
    const result = await runAgent({
      model: createMockModel({ responses: [{ text: 'x' }] }),
      prompt: 'x',
      session: { store: failingAt(createInMemoryAgentRunStore(), 1), runId: 'r-2', scope: 's' },
    });
    if (result.status !== 'failed') throw new Error(result.status);
    expect(result.error.message).toBe('Saving run r-2 failed: disk full');
  });
});

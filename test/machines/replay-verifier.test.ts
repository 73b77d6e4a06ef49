/**
 * replayRun on runs with a verifier and runs a guardrail refused a call in:
 * each run goes through the public runAgent/resumeAgent on an in-memory and a
 * SQLite store with a scripted model, and every record it leaves (the ended
 * one and the ones on the way) replays to its stored snapshot. A record edited
 * where the verdicts are read from, or a machine that counts attempts
 * differently, is caught where it first goes elsewhere.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createInMemoryAgentRunStore, resumeAgent, runAgent,
  type AgentOptions, type AgentRunEnvelope, type AgentRunStore, type AgentTools, type VerifyVerdict,
} from 'cairn/agent';
import { replayRun, RUN_PROMPTS, runMachine, type ReplayReport } from 'cairn/machines';
import { createCrashPlan, createFaultyStore, createMockModel, type MockResponse } from 'cairn/testing';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';

type Answer = { answer: number };
const answerSchema = { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'], additionalProperties: false };
const validateAnswer = (value: unknown): Answer => {
  if (typeof (value as { answer?: unknown } | null)?.answer !== 'number') throw new Error('Expected a numeric answer.');
  return { answer: (value as Answer).answer };
};
const json = { mode: 'json' as const, schema: answerSchema, validate: validateAnswer };

const dir = mkdtempSync(join(tmpdir(), 'cairn-replay-verifier-'));
const sqlite = createSqliteOpsStore({ path: join(dir, 'runs.sqlite') });
afterAll(() => {
  sqlite.close();
  rmSync(dir, { recursive: true, force: true });
});
const STORES: Array<[string, () => AgentRunStore]> = [
  ['in-memory', () => createInMemoryAgentRunStore()],
  ['sqlite', () => sqlite.agentRuns],
];

let runs = 0;
const ids = () => {
  let n = 0;
  return () => `id-${++n}`;
};

type Verify = (input: { output: unknown; text: string; attempt: number }) => VerifyVerdict | Promise<VerifyVerdict>;

/** One run's options: a scripted model, the run's session on `store`, fixed clock and ids. */
function options(store: AgentRunStore, runId: string, responses: MockResponse[], extra: Partial<AgentOptions<unknown>> = {}): AgentOptions<unknown> {
  return {
    model: createMockModel({ responses }),
    prompt: 'Answer.',
    bindingId: 'replay-verifier-v1',
    maxRetries: 0,
    session: { store, runId, scope: 'replay' },
    deps: { clock: { now: () => 1_000 }, generateId: ids() },
    ...extra,
  } as AgentOptions<unknown>;
}

const load = async (store: AgentRunStore, runId: string) => (await store.load(runId))!;
const snapshotOf = (envelope: AgentRunEnvelope) => envelope.snapshot as {
  value: unknown;
  context: { messages: { role: string; content: unknown }[]; verifyAttempts: number; stopDetails: unknown; step: number };
  children: Record<string, { snapshot: { context: { args: unknown; outcome: unknown } } }>;
};

/** The record replays to its snapshot, with nothing of it changed by the replay. */
function expectReplays(envelope: AgentRunEnvelope): ReplayReport {
  const before = JSON.stringify(envelope);
  const report = replayRun(envelope);
  expect(report.divergence).toBeNull();
  expect(report.reached).toBe(true);
  expect(JSON.stringify(envelope)).toBe(before);
  runs += 1;
  return report;
}

const feedbackMessages = (envelope: AgentRunEnvelope) =>
  snapshotOf(envelope).context.messages.filter((m) => m.role === 'user' && typeof m.content === 'string' && m.content.startsWith('Your answer was checked'));

describe.each(STORES)('replayRun: a run with a verifier (%s store)', (name, makeStore) => {
  const id = (what: string) => `${name}-${what}`;

  it('verified the first time, text output', async () => {
    const store = makeStore();
    const verify: Verify = () => ({ status: 'verified' });
    const result = await runAgent(options(store, id('text-pass'), [{ text: 'Done.' }], { verify }));
    expect(result.status).toBe('completed');
    const report = expectReplays(await load(store, id('text-pass')));
    expect(report).toMatchObject({ turns: 1 });
    expect(report.assumed).toBeUndefined();
  });

  it('verified the first time, structured output', async () => {
    const store = makeStore();
    const result = await runAgent(options(store, id('json-pass'), [{ text: '{"answer":42}' }], { output: json, verify: () => ({ status: 'verified' }) }));
    expect(result.status).toBe('completed');
    expect(expectReplays(await load(store, id('json-pass'))).assumed).toBeUndefined();
  });

  it('rejected once, then verified: text output, after a tool step', async () => {
    const store = makeStore();
    const tools: AgentTools = { look: { description: 'Look.', parameters: { type: 'object', properties: {} }, execute: () => ({ seen: 3 }) } };
    const verify: Verify = ({ text }) => (text === 'Three.' ? { status: 'verified' } : { status: 'rejected', feedback: 'Say how many you saw.' });
    const result = await runAgent(options(store, id('text-reject'), [
      { toolCalls: [{ toolName: 'look', toolCallId: 'l1' }] }, { text: 'Some.' }, { text: 'Three.' },
    ], { tools, verify }));
    expect(result.status).toBe('completed');
    const stored = await load(store, id('text-reject'));
    expect(feedbackMessages(stored).map((m) => m.content)).toEqual([RUN_PROMPTS.feedback('Say how many you saw.')]);
    expect(snapshotOf(stored).context.verifyAttempts).toBe(2);
    const report = expectReplays(stored);
    expect(report.turns).toBe(3);
    expect(report.assumed).toBeUndefined();
  });

  it('rejected once, then verified: structured output, with a repair on the way', async () => {
    const store = makeStore();
    const verify: Verify = ({ output }) => ((output as Answer).answer === 42 ? { status: 'verified' } : { status: 'rejected', feedback: 'Recheck the sum.' });
    const result = await runAgent(options(store, id('json-reject'), [
      { text: '{"answer":41}' }, { text: 'It is 42.' }, { text: '{"answer":42}' },
    ], { output: json, verify }));
    expect(result.status).toBe('completed');
    if (result.status === 'completed') expect(result.output).toEqual({ answer: 42 });
    const stored = await load(store, id('json-reject'));
    expect(feedbackMessages(stored)).toHaveLength(1);
    expect(snapshotOf(stored).context.messages.some((m) => typeof m.content === 'string' && m.content.startsWith('That answer did not match'))).toBe(true);
    expect(expectReplays(stored)).toMatchObject({ turns: 3 });
  });

  it('rejected once, then verified: structured output through the output tool, after a loop', async () => {
    const store = makeStore();
    const tools: AgentTools = { look: { description: 'Look.', parameters: { type: 'object', properties: {} }, execute: () => 'forty-two' } };
    const verify: Verify = ({ output }) => ((output as Answer).answer === 42 ? { status: 'verified' } : { status: 'rejected', feedback: 'Not 41.' });
    const result = await runAgent(options(store, id('tool-reject'), [
      { toolCalls: [{ toolName: 'look', toolCallId: 'l1' }] },
      { text: 'I know it.' },
      { toolCalls: [{ toolName: 'json_output', args: { answer: 41 } }] },
      { toolCalls: [{ toolName: 'json_output', args: { answer: 42 } }] },
    ], { tools, output: { ...json, mode: 'tool' as const }, verify }));
    expect(result.status).toBe('completed');
    expect(expectReplays(await load(store, id('tool-reject')))).toMatchObject({ turns: 4 });
  });

  it('stops inconclusive (a verdict, and a verifier that threw)', async () => {
    const store = makeStore();
    const said = await runAgent(options(store, id('inconclusive'), [{ text: '{"answer":1}' }], {
      output: json, verify: () => ({ status: 'inconclusive', reason: 'No reference to check against.' }),
    }));
    expect(said).toMatchObject({ status: 'stopped', reason: 'verification-inconclusive', stopDetails: { reason: 'No reference to check against.' } });
    expectReplays(await load(store, id('inconclusive')));
    const threw = await runAgent(options(store, id('threw'), [{ text: 'Done.' }], {
      verify: () => {
        throw new Error('checker offline');
      },
    }));
    expect(threw).toMatchObject({ status: 'stopped', reason: 'verification-inconclusive' });
    expectReplays(await load(store, id('threw')));
  });

  it('stops on the deadline or an abort while the verifier runs', async () => {
    const store = makeStore();
    let now = 1_000;
    const late = await runAgent(options(store, id('deadline'), [{ text: 'Done.' }], {
      deadline: 5_000,
      deps: { clock: { now: () => now }, generateId: ids() },
      verify: () => {
        now = 9_000;
        return { status: 'verified' };
      },
    }));
    expect(late).toMatchObject({ status: 'failed', error: { code: 'deadline_exceeded' } });
    expectReplays(await load(store, id('deadline')));
    const controller = new AbortController();
    const aborted = await runAgent(options(store, id('aborted'), [{ text: 'Done.' }], {
      abortSignal: controller.signal,
      verify: () => {
        controller.abort();
        return { status: 'verified' };
      },
    }));
    expect(aborted).toMatchObject({ status: 'stopped', reason: 'aborted' });
    expectReplays(await load(store, id('aborted')));
  });

  it('structured output without a verifier: repaired, and out of output attempts', async () => {
    const store = makeStore();
    const repaired = await runAgent(options(store, id('repaired'), [{ text: 'Seven.' }, { text: '{"answer":7}' }], { output: json }));
    expect(repaired.status).toBe('completed');
    expectReplays(await load(store, id('repaired')));
    const exhausted = await runAgent(options(store, id('output-exhausted'), [{ text: 'Seven.' }, { text: 'Still seven.' }], { output: json, maxOutputAttempts: 2 }));
    expect(exhausted).toMatchObject({ status: 'stopped', reason: 'output-attempts-exhausted' });
    expectReplays(await load(store, id('output-exhausted')));
  });

  it('exhausts its verify attempts', async () => {
    const store = makeStore();
    const result = await runAgent(options(store, id('exhausted'), [{ text: '{"answer":1}' }, { text: '{"answer":2}' }], {
      output: json, maxVerifyAttempts: 2, verify: ({ attempt }) => ({ status: 'rejected', feedback: `Wrong (${attempt}).` }),
    }));
    expect(result).toMatchObject({ status: 'stopped', reason: 'verification-attempts-exhausted', stopDetails: { feedback: 'Wrong (2).' } });
    const stored = await load(store, id('exhausted'));
    expect(snapshotOf(stored).context.verifyAttempts).toBe(2);
    expectReplays(stored);
  });

  it('a failed save after the verdict: the record in verifying replays, and so does the resumed run that verified again', async () => {
    const inner = makeStore();
    let verifications = 0;
    const verify: Verify = () => {
      verifications++;
      return { status: 'verified' };
    };
    // Saves: start, turn, attempt count, terminal (this one fails).
    const failing = createFaultyStore(inner, { failSave: { at: 4, mode: 'reject' } });
    const first = await runAgent(options(failing, id('failed-save'), [{ text: '{"answer":42}' }], { output: json, verify }));
    expect(first.status).toBe('failed');
    const mid = await load(inner, id('failed-save'));
    expect(snapshotOf(mid).value).toEqual({ verifying: 'beginning' });
    expect(expectReplays(mid).assumed).toBeUndefined();
    const resumed = await resumeAgent(options(inner, id('failed-save'), [], { output: json, verify }) as never);
    expect(resumed.status).toBe('completed');
    expect(verifications).toBe(2);
    const done = await load(inner, id('failed-save'));
    expect(snapshotOf(done).context.verifyAttempts).toBe(2);
    const report = expectReplays(done);
    expect(report.assumed).toEqual([expect.stringContaining('one as a restore while verifying, at attempt 1')]);
  });

  it('a failed save with no attempt left: the restore stops the run as exhausted', async () => {
    const inner = makeStore();
    const verify: Verify = () => ({ status: 'verified' });
    const failing = createFaultyStore(inner, { failSave: { at: 4, mode: 'reject' } });
    expect((await runAgent(options(failing, id('restored-out'), [{ text: '{"answer":42}' }], { output: json, verify, maxVerifyAttempts: 1 }))).status).toBe('failed');
    const resumed = await resumeAgent(options(inner, id('restored-out'), [], { output: json, verify, maxVerifyAttempts: 1 }) as never);
    expect(resumed).toMatchObject({ status: 'stopped', reason: 'verification-attempts-exhausted' });
    expect(resumed).not.toHaveProperty('stopDetails');
    expectReplays(await load(inner, id('restored-out')));
  });

  it('a crash inside verifying after a rejection: the process dies once the attempt count is saved, a new one resumes', async () => {
    const data = makeStore();
    const verify: Verify = ({ output }) => ((output as Answer).answer === 42 ? { status: 'verified' } : { status: 'rejected', feedback: 'Recheck.' });
    // Saves: start, turn, attempt 1, turn, attempt 2 (lands, then the process is gone).
    const plan = createCrashPlan({ at: { kind: 'save', index: 5, when: 'after' } });
    const first = options(plan.wrapStore(data), id('crash'), [{ text: '{"answer":41}' }, { text: '{"answer":42}' }], { output: json, verify });
    const outcome = await plan.race(runAgent({ ...first, model: plan.wrapModel(first.model as never) } as never));
    expect(outcome.crashed).toBe(true);
    // A new process over the same data (the crashed one's calls never settle).
    const fresh = data;
    const mid = await load(fresh, id('crash'));
    expect(snapshotOf(mid)).toMatchObject({ value: { verifying: 'beginning' }, context: { verifyAttempts: 2 } });
    const midReport = expectReplays(mid);
    expect(midReport.assumed).toEqual([expect.stringContaining('feedback at message 2 is read from the transcript')]);
    const resumed = await resumeAgent(options(fresh, id('crash'), [], { output: json, verify }) as never);
    expect(resumed.status).toBe('completed');
    const done = await load(fresh, id('crash'));
    expect(snapshotOf(done).context.verifyAttempts).toBe(3);
    expect(expectReplays(done).assumed).toEqual([expect.stringContaining('at attempt 2')]);
  });

  it('a model call that failed right after a rejection, retried with retryFailed: the verifier ran again from its save', async () => {
    const store = makeStore();
    const verify: Verify = ({ output }) => ((output as Answer).answer === 42 ? { status: 'verified' } : { status: 'rejected', feedback: 'Recheck.' });
    const first = await runAgent(options(store, id('retry'), [{ text: '{"answer":41}' }, { error: { status: 503 } }], { output: json, verify }));
    expect(first).toMatchObject({ status: 'failed', retry: { phase: 'finalize' } });
    expectReplays(await load(store, id('retry')));
    const retried = await resumeAgent({ ...options(store, id('retry'), [{ text: '{"answer":42}' }], { output: json, verify }), retryFailed: true } as never);
    expect(retried.status).toBe('completed');
    const done = await load(store, id('retry'));
    expect(snapshotOf(done).context).toMatchObject({ verifyAttempts: 3, step: 3 });
    expect(expectReplays(done).assumed).toEqual([expect.stringContaining('at attempt 1')]);
  });
});

describe.each(STORES)('replayRun: calls a guardrail or the argument check refused (%s store)', (name, makeStore) => {
  const id = (what: string) => `${name}-${what}`;
  const tools: AgentTools = {
    wipe: { description: 'Wipe a disk.', parameters: { type: 'object', properties: { disk: { type: 'string' } } }, execute: () => 'wiped' },
    look: { description: 'Look.', parameters: { type: 'object', properties: { at: { type: 'string' } }, required: ['at'] }, execute: ({ at }: { at: string }) => `saw ${at}` },
    pay: {
      description: 'Pay.', parameters: { type: 'object', properties: { amount: { type: 'number' } } }, needsApproval: true,
      execute: ({ amount }: { amount: number }) => ({ paid: amount }),
    },
  };
  const onToolCall = ({ toolName, args }: { toolName: string; args: unknown }) => {
    if (toolName === 'wipe') return { action: 'block' as const, reason: 'Not on this host.' };
    if (toolName === 'pay' && (args as { amount: number }).amount > 10) return { action: 'rewrite' as const, args: { amount: 10 } };
    return undefined;
  };

  it('a block, a rewrite and refused arguments in one step, then a completed run', async () => {
    const store = makeStore();
    const result = await runAgent(options(store, id('guarded'), [
      { toolCalls: [{ toolName: 'wipe', toolCallId: 'w1', args: { disk: 'sda' } }, { toolName: 'look', toolCallId: 'l1', args: { at: 'logs' } }, { toolName: 'look', toolCallId: 'l2', args: {} }] },
      { text: 'Looked; the wipe was refused.' },
    ], { tools: { wipe: tools.wipe!, look: tools.look! }, onToolCall }));
    expect(result.status).toBe('completed');
    const stored = await load(store, id('guarded'));
    const answers = snapshotOf(stored).context.messages.filter((m) => m.role === 'tool').map((m) => m.content);
    expect(answers[0]).toBe('Tool call blocked: Not on this host.');
    expect(answers[1]).toBe('saw logs');
    expect(Object.keys(stored.receipts)).toHaveLength(1);
    expectReplays(stored);
  });

  it('a guardrail that threw: the call failed with no effect, and the run went on', async () => {
    const store = makeStore();
    const result = await runAgent(options(store, id('guard-threw'), [
      { toolCalls: [{ toolName: 'look', toolCallId: 'l1', args: { at: 'logs' } }] },
      { text: 'Could not look.' },
    ], {
      tools: { look: tools.look! },
      onToolCall: () => {
        throw new Error('policy service down');
      },
    }));
    expect(result.status).toBe('completed');
    const stored = await load(store, id('guard-threw'));
    expect(snapshotOf(stored).context.messages.find((m) => m.role === 'tool')).toMatchObject({ content: 'policy service down', isError: true });
    expect(Object.keys(stored.receipts)).toHaveLength(0);
    expectReplays(stored);
  });

  it('suspended beside a call whose guardrail threw, then approved', async () => {
    const store = makeStore();
    const script: MockResponse[] = [
      { toolCalls: [{ toolName: 'wipe', toolCallId: 'w1', args: { disk: 'sda' } }, { toolName: 'pay', toolCallId: 'p1', args: { amount: 5 } }] },
      { text: 'Paid.' },
    ];
    const guard = ({ toolName }: { toolName: string }) => {
      if (toolName === 'wipe') throw new Error('policy service down');
      return undefined;
    };
    const first = await runAgent(options(store, id('threw-suspended'), script, { tools, onToolCall: guard }));
    if (first.status !== 'suspended') throw new Error(first.status);
    const mid = await load(store, id('threw-suspended'));
    expect(snapshotOf(mid).children['call-0-0']!.snapshot.context).toMatchObject({ outcome: 'failed' });
    expectReplays(mid);
    const approvalResponses = first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true }));
    const done = await resumeAgent({ ...options(store, id('threw-suspended'), script.slice(1), { tools, onToolCall: guard }), approvalResponses } as never);
    expect(done.status).toBe('completed');
    expectReplays(await load(store, id('threw-suspended')));
  });

  it('refused arguments checked on the way in (no guardrail)', async () => {
    const store = makeStore();
    const result = await runAgent(options(store, id('inline'), [
      { toolCalls: [{ toolName: 'look', toolCallId: 'l1', args: {} }, { toolName: 'look', toolCallId: 'l2', args: { at: 'disk' } }] },
      { text: 'Done.' },
    ], { tools: { look: tools.look! } }));
    expect(result.status).toBe('completed');
    expectReplays(await load(store, id('inline')));
  });

  it('suspended with a blocked sibling and a rewritten call awaiting approval, then approved', async () => {
    const store = makeStore();
    const script: MockResponse[] = [
      { toolCalls: [{ toolName: 'wipe', toolCallId: 'w1', args: { disk: 'sda' } }, { toolName: 'pay', toolCallId: 'p1', args: { amount: 50 } }] },
      { text: 'Paid 10.' },
    ];
    const first = await runAgent(options(store, id('suspended'), script, { tools, onToolCall }));
    if (first.status !== 'suspended') throw new Error(first.status);
    const mid = await load(store, id('suspended'));
    const children = snapshotOf(mid).children;
    expect(children['call-0-0']!.snapshot.context).toMatchObject({ outcome: 'blocked' });
    expect(children['call-0-1']!.snapshot.context.args).toEqual({ amount: 10 });
    expect(expectReplays(mid).assumed).toEqual([expect.stringContaining("call p1 (step 0) in the snapshot differ from the ones the model gave: the replay took them as a guardrail's rewrite")]);
    const approvalResponses = first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true }));
    const done = await resumeAgent({ ...options(store, id('suspended'), script.slice(1), { tools, onToolCall }), approvalResponses } as never);
    expect(done.status).toBe('completed');
    const stored = await load(store, id('suspended'));
    expect(Object.values(stored.receipts).map((r) => r.rawResult)).toEqual([{ paid: 10 }]);
    expect(expectReplays(stored).assumed).toBeUndefined();
  });
});

describe('replayRun catches what a verifier run would not have made', () => {
  const store = createInMemoryAgentRunStore();
  const verify: Verify = ({ output }) => ((output as Answer).answer === 42 ? { status: 'verified' } : { status: 'rejected', feedback: 'Recheck the sum.' });
  const rejectedThenVerified = async (runId: string) => {
    await runAgent(options(store, runId, [{ text: '{"answer":41}' }, { text: '{"answer":42}' }], { output: json, verify }));
    return load(store, runId);
  };

  it('an edited feedback prompt: the result says what the verifier said', async () => {
    const envelope = await rejectedThenVerified('edited-feedback');
    const messages = snapshotOf(envelope).context.messages;
    const at = messages.findIndex((m) => m.content === RUN_PROMPTS.feedback('Recheck the sum.'));
    messages[at] = { ...messages[at]!, content: RUN_PROMPTS.feedback('Looks fine.') };
    const report = replayRun(envelope);
    expect(report.reached).toBe(false);
    expect(report.divergence).toMatchObject({
      message: `The replay's transcript differs from the record at message ${at}.`,
      path: `messages[${at}].content`, expected: RUN_PROMPTS.feedback('Looks fine.'), found: RUN_PROMPTS.feedback('Recheck the sum.'),
    });
  });

  it('a verify attempt count lower than the verdicts need', async () => {
    const envelope = await rejectedThenVerified('fewer-attempts');
    snapshotOf(envelope).context.verifyAttempts = 1;
    const report = replayRun(envelope);
    expect(report.reached).toBe(false);
    expect(report.divergence).toMatchObject({ message: 'The replay ended in another state than the record.', path: 'context.verifyAttempts', expected: 1, found: 2 });
  });

  it('a verify attempt count higher than the verdicts need: taken as a restore, and the report says so', async () => {
    const envelope = await rejectedThenVerified('more-attempts');
    snapshotOf(envelope).context.verifyAttempts = 3;
    const report = replayRun(envelope);
    expect(report.reached).toBe(true);
    expect(report.assumed).toEqual([
      'verifyAttempts is 3, 1 more than the verdicts in the record account for: the replay took one as a restore while verifying, at attempt 2 (a record keeps the count, not when a restore came).',
    ]);
    // More than the run allows is no restore.
    snapshotOf(envelope).context.verifyAttempts = 4;
    expect(replayRun(envelope)).toMatchObject({ reached: false, divergence: { path: 'context.verifyAttempts', expected: 4, found: 3 } });
  });

  it("an edited inconclusive reason: the result's stop says what the verifier said", async () => {
    await runAgent(options(store, 'edited-reason', [{ text: 'Done.' }], { verify: () => ({ status: 'inconclusive', reason: 'No reference.' }) }));
    const envelope = await load(store, 'edited-reason');
    snapshotOf(envelope).context.stopDetails = { reason: 'Checked.' };
    expect(replayRun(envelope).divergence).toMatchObject({ path: 'context.stopDetails.reason', expected: 'Checked.', found: 'No reference.' });
  });

  it('a machine that allows one more verify attempt goes on where the record stopped', async () => {
    await runAgent(options(store, 'exhausted', [{ text: 'One.' }, { text: 'Two.' }], { maxVerifyAttempts: 2, verify: () => ({ status: 'rejected', feedback: 'No.' }) }));
    const envelope = await load(store, 'exhausted');
    const planted = runMachine.provide({
      guards: { verifyAttemptsLeft: ({ context }: { context: { verifyAttempts: number; maxVerifyAttempts: number } }) => context.verifyAttempts <= context.maxVerifyAttempts } as never,
    });
    const report = replayRun(envelope, { machines: { run: planted } });
    expect(report.reached).toBe(false);
    const length = snapshotOf(envelope).context.messages.length;
    expect(report.divergence).toMatchObject({ step: 2, message: `The replay's transcript differs from the record at message ${length}.`, path: `messages[${length}]`, expected: undefined });
    expect(replayRun(envelope).reached).toBe(true);
  });

  it('a record that holds no verdict for the verifier says so', async () => {
    // The run ended in verifying, on a stop no verdict makes.
    await runAgent(options(store, 'no-verdict', [{ text: 'Done.' }], { verify: () => ({ status: 'inconclusive', reason: 'No reference.' }) }));
    const envelope = await load(store, 'no-verdict');
    (envelope.snapshot as { context: { stopReason: string } }).context.stopReason = 'max-steps';
    (envelope.result as { reason: string }).reason = 'max-steps';
    expect(replayRun(envelope)).toMatchObject({
      reached: false,
      divergence: { step: 1, message: 'The run waits on its verifier here, and the record ends stopped (max-steps), which no verdict leads to.', path: 'children.runVerifier' },
    });
    // The result's transcript (where verdicts are read from) goes on after the candidate with a message no verdict writes.
    const other = await rejectedThenVerified('no-feedback');
    (other.result as { messages: unknown[] }).messages[2] = { role: 'user', content: 'Also add the tax.' };
    expect(replayRun(other).divergence).toMatchObject({
      message: "The record goes on after the final answer at message 1 with message 2, which is neither a repair prompt nor the verifier's feedback.",
    });
  });
});

describe('replayRun figures', () => {
  it('counts the records replayed above', () => {
    console.log(`replay-verifier: ${runs} stored records replayed to their snapshots`);
    expect(runs).toBeGreaterThan(0);
  });
});

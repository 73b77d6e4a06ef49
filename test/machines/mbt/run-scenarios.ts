/**
 * The run machine's main paths: for each, the path in the model (the events
 * the run actor receives, with the process boundary where a resume restores
 * the stored run) and the concrete run that should take it in the runtime.
 */
import { expect } from 'vitest';
import type { AgentTool, LeaseProvider } from 'cairn/agent';
import { createMockModel, type MockResponse } from 'cairn/testing';
import { createExecutionContext } from 'cairn/policy';
import type { RunInput } from '../../../machines/index.js';
import type { RunHarness, RunRun } from './drive-run.js';
import { signal, storedRunValue, T0 } from './harness.js';
import { ev, RESTORE, type RunModelEvent } from './run-model.js';
import { MEMORY_RUN_SCENARIOS } from './memory-intent-run-scenarios.js';
import { CHAT_END_SCENARIOS } from './chat-end-scenarios.js';
import { HANDOFF_SCENARIOS } from './handoff-scenarios.js';

export interface RunScenario {
  name: string;
  /** The model's run input (what the runtime derives from the options below). */
  input: Partial<RunInput>;
  /** The path in the model. */
  path: RunModelEvent[];
  drive(h: RunHarness): Promise<void>;
  check(run: RunRun): void;
}

const mock = (responses: MockResponse[]) => createMockModel({ responses });
const lookup: AgentTool = {
  description: 'Look a fact up.',
  parameters: { type: 'object', properties: {} },
  execute: () => ({ answer: 42 }),
};
const answer = {
  schema: { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'] },
  validate: (v: unknown) => {
    if (v === null || typeof v !== 'object' || typeof (v as { answer?: unknown }).answer !== 'number') throw new Error('Expected {"answer": number}.');
    return { answer: (v as { answer: number }).answer };
  },
};
const call = (toolName = 'lookup') => ({ toolCallId: 'c1', toolName, args: {} });
const S = ev.saved;

/** The model asks to publish, the call asks for approval, and the run saves its suspension. */
const suspendOnPublish = [
  S('saveStart'), ev.turn(0, { toolCalls: [call('publish')] }),
  ev.toCall('call-0-0', { type: 'xstate.done.actor.guardCall', output: { kind: 'allow' } }),
  ev.toCall('call-0-0', { type: 'xstate.done.actor.checkArguments', output: { kind: 'valid' } }),
  ev.toCall('call-0-0', { type: 'xstate.done.actor.decideApproval', output: { kind: 'wait' } }),
  ev.toCall('call-0-0', { type: 'xstate.done.actor.issueApproval', output: { approvalId: 'c1@approval', token: 'token-1', client: false } }),
  S('saveSuspension'),
];
const isVerifyingBeginning = (e: unknown) => JSON.stringify(storedRunValue(e as never)) === '{"verifying":"beginning"}';

/** A verifier whose first call hangs until the process dies; later calls answer `verdict`. */
function hangingVerifier(verdict: { status: 'verified' }) {
  const started = signal();
  const attempts: number[] = [];
  const verify = async ({ attempt, signal: abort }: { attempt: number; signal: AbortSignal }) => {
    attempts.push(attempt);
    if (attempts.length === 1) {
      started.resolve();
      await new Promise((_, reject) => abort.addEventListener('abort', () => reject(new Error('process died')), { once: true }));
    }
    return verdict;
  };
  return { started, attempts, verify };
}

/**
 * A lease provider whose next renewal after `requestDrain` carries the drain
 * request, once. `delivered` settles once that renewal was answered and the
 * host had the time to hand DRAIN to the run.
 */
function drainingLease() {
  let asked = false;
  const answered = signal();
  const provider: LeaseProvider = {
    acquire: async (key, owner, ttlMs) => ({ key, owner, token: 1, expiresAt: T0 + ttlMs }),
    renew: async (lease) => {
      const drain = asked;
      if (drain) {
        asked = false;
        answered.resolve();
      }
      return { lease, drain };
    },
    release: async () => undefined,
    requestDrain: async () => {
      asked = true;
    },
    inspect: async () => null,
  };
  const delivered = answered.promise.then(() => new Promise((r) => setTimeout(r, 0)));
  // The shortest renewal period the host uses (ttl / 3, at least 10 ms).
  return { provider, delivered, lease: { provider, ttlMs: 30 } };
}

/** A model turn answered only once a drain request reached the run (it arrives while the model works). */
const afterDrain = (lease: ReturnType<typeof drainingLease>, turn: Exclude<MockResponse, (...a: never[]) => unknown>): MockResponse => async () => {
  await lease.provider.requestDrain('mbt-run');
  await lease.delivered;
  return turn;
};

export const RUN_SCENARIOS: RunScenario[] = [
  {
    name: 'text answer → completed',
    input: {},
    path: [S('saveStart'), ev.turn(0, { text: 'Hello.' })],
    drive: async (h) => void (await h.start({ ...h.base(), model: mock([{ text: 'Hello.' }]), prompt: 'Say hello.' })),
    check: (run) => expect(run.last).toMatchObject({ status: 'completed', output: 'Hello.', steps: 1 }),
  },
  {
    name: 'tool loop → completed',
    input: { toolNames: ['lookup'] },
    path: [
      S('saveStart'), ev.turn(0, { toolCalls: [call()] }), ev.callEnded('call-0-0'), S('saveStep'),
      ev.turn(1, { text: '42.' }),
    ],
    drive: async (h) => void (await h.start({
      ...h.base(), tools: { lookup }, model: mock([{ toolCalls: [call()] }, { text: '42.' }]), prompt: 'Look it up.',
    })),
    check: (run) => {
      expect(run.last).toMatchObject({ status: 'completed', output: '42.', steps: 2 });
      expect(run.last.messages).toContainEqual({ role: 'tool', toolCallId: 'c1', toolName: 'lookup', content: { answer: 42 } });
    },
  },
  {
    name: 'suspend on approval → resume → completed',
    input: { toolNames: ['publish'] },
    path: [
      ...suspendOnPublish,
      // A new process resumes the stored run: restored in `suspending` (the state that saved it), its save runs again.
      RESTORE, ev.restored(), S('saveSuspension'), ev.resume({ 'call-0-0': { verdict: { approved: true } } }),
      ev.callEnded('call-0-0', { toolName: 'publish' }), S('saveStep'), ev.turn(1, { text: 'Published.' }),
    ],
    drive: async (h) => {
      let published = 0;
      const options = {
        ...h.base(),
        prompt: 'Publish.',
        model: mock([{ toolCalls: [call('publish')] }, { text: 'Published.' }]),
        tools: { publish: { ...lookup, needsApproval: true, execute: () => ++published } },
      };
      const first = await h.start(options);
      expect(first.result.status).toBe('suspended');
      expect(published).toBe(0);
      if (first.result.status !== 'suspended') return;
      const approvalResponses = first.result.pendingApprovals.map((a) => ({ approvalId: a.approvalId, token: a.token, approved: true }));
      await h.resume({ ...options, ...h.base(), approvalResponses });
      expect(published).toBe(1);
    },
    check: (run) => expect(run.last).toMatchObject({ status: 'completed', output: 'Published.' }),
  },
  {
    name: 'a tool the execution policy forbids → failed before any call starts',
    input: { toolNames: ['lookup', 'publish'], plan: { durable: true, policy: true, calls: {} } },
    path: [S('saveStart'), ev.turn(0, { toolCalls: [call('publish')] }), ev.policyViolation()],
    drive: async (h) => void (await h.start({
      ...h.base(), prompt: 'Publish.', tools: { lookup, publish: lookup }, model: mock([{ toolCalls: [call('publish')] }]),
      execution: createExecutionContext({ allowedTools: ['lookup'] }),
    })),
    check: (run) => expect(run.last).toMatchObject({ status: 'failed', error: { code: 'tool_not_allowed', toolCallId: 'c1' } }),
  },
  {
    name: 'the execution budget refuses the first model call → stopped',
    input: {},
    path: [S('saveStart'), ev.modelOverBudget()],
    drive: async (h) => void (await h.start({
      ...h.base(), prompt: 'Hi.', model: mock([{ text: 'never' }]),
      execution: createExecutionContext({ budget: { tokens: 10, estimate: { inputTokens: 5, outputTokens: 10 } } }),
    })),
    check: (run) => expect(run.last).toMatchObject({ status: 'stopped', reason: 'budget-exceeded' }),
  },
  {
    name: 'finalization: the execution budget refuses the model call → stopped',
    input: { outputMode: 'json' },
    path: [S('saveStart'), ev.modelOverBudget()],
    drive: async (h) => void (await h.start({
      ...h.base(), prompt: 'Answer as JSON.', output: answer, model: mock([{ text: 'never' }]),
      execution: createExecutionContext({ budget: { tokens: 10, estimate: { inputTokens: 5, outputTokens: 10 } } }),
    })),
    check: (run) => expect(run.last).toMatchObject({ status: 'stopped', reason: 'budget-exceeded' }),
  },
  {
    name: 'suspend on approval → a resume under a policy that forbids the tool → failed before it runs',
    input: { toolNames: ['publish'] },
    path: [
      ...suspendOnPublish,
      RESTORE, ev.restored(), S('saveSuspension'), ev.settleViolation(),
    ],
    drive: async (h) => {
      let published = 0;
      const options = {
        ...h.base(),
        prompt: 'Publish.',
        model: mock([{ toolCalls: [call('publish')] }]),
        tools: { publish: { ...lookup, needsApproval: true, execute: () => ++published } },
      };
      const first = await h.start(options);
      if (first.result.status !== 'suspended') throw new Error('expected a suspension');
      const approvalResponses = first.result.pendingApprovals.map((a) => ({ approvalId: a.approvalId, token: a.token, approved: true }));
      await h.resume({ ...options, ...h.base(), approvalResponses, execution: createExecutionContext({ allowedTools: [] }) });
      expect(published).toBe(0);
    },
    check: (run) => expect(run.last).toMatchObject({ status: 'failed', error: { code: 'tool_not_allowed', toolCallId: 'c1' } }),
  },
  {
    name: 'json finalization with one repair → completed',
    input: { outputMode: 'json', maxOutputAttempts: 2 },
    path: [
      S('saveStart'), ev.turn(0, { phase: 'finalize', text: 'forty-two' }), S('saveTurn'), ev.invalid('The answer is not valid JSON.'),
      ev.turn(1, { phase: 'finalize', text: '{"answer":42}' }), S('saveTurn'), ev.valid({ answer: 42 }),
    ],
    drive: async (h) => void (await h.start({
      ...h.base(), prompt: 'Answer as JSON.', output: answer, maxOutputAttempts: 2,
      model: mock([{ text: 'forty-two' }, { text: '{"answer":42}' }]),
    })),
    check: (run) => {
      expect(run.last).toMatchObject({ status: 'completed', output: { answer: 42 }, steps: 2 });
      expect(run.legs[0]!.events.filter((e) => e.type === 'output-attempt').map((e) => (e as { valid: boolean }).valid)).toEqual([false, true]);
    },
  },
  {
    name: 'tool loop answers in text, then json finalization → completed',
    input: { toolNames: ['lookup'], outputMode: 'json' },
    path: [
      S('saveStart'), ev.turn(0, { text: 'I know it.' }), S('saveTurn'),
      ev.turn(1, { phase: 'finalize', text: '{"answer":42}' }), S('saveTurn'), ev.valid({ answer: 42 }),
    ],
    drive: async (h) => void (await h.start({
      ...h.base(), prompt: 'Answer as JSON.', output: answer, tools: { lookup },
      model: mock([{ text: 'I know it.' }, { text: '{"answer":42}' }]),
    })),
    check: (run) => expect(run.last).toMatchObject({ status: 'completed', output: { answer: 42 }, steps: 2 }),
  },
  {
    name: 'json repairs used up → stopped',
    input: { outputMode: 'json', maxOutputAttempts: 1 },
    path: [S('saveStart'), ev.turn(0, { phase: 'finalize', text: 'no idea' }), S('saveTurn'), ev.invalid('The answer is not valid JSON.')],
    drive: async (h) => void (await h.start({
      ...h.base(), prompt: 'Answer as JSON.', output: answer, maxOutputAttempts: 1, model: mock([{ text: 'no idea' }]),
    })),
    check: (run) => expect(run.last).toMatchObject({ status: 'stopped', reason: 'output-attempts-exhausted' }),
  },
  {
    name: 'json repair with no model step left → stopped (max-steps)',
    input: { outputMode: 'json', maxOutputAttempts: 2, maxSteps: 1 },
    path: [S('saveStart'), ev.turn(0, { phase: 'finalize', text: 'no idea' }), S('saveTurn'), ev.invalid('The answer is not valid JSON.')],
    drive: async (h) => void (await h.start({
      ...h.base(), prompt: 'Answer as JSON.', output: answer, maxOutputAttempts: 2, maxSteps: 1, model: mock([{ text: 'no idea' }]),
    })),
    check: (run) => expect(run.last).toMatchObject({ status: 'stopped', reason: 'max-steps' }),
  },
  {
    name: 'output validator returns a value that is not JSON → failed',
    input: { outputMode: 'json' },
    path: [S('saveStart'), ev.turn(0, { phase: 'finalize', text: '{"answer":42}' }), S('saveTurn'), ev.validateThrew()],
    drive: async (h) => void (await h.start({
      ...h.base(), prompt: 'Answer as JSON.', model: mock([{ text: '{"answer":42}' }]),
      output: { schema: answer.schema, validate: () => ({ answer: BigInt(42) }) as never },
    })),
    check: (run) => expect(run.last.status).toBe('failed'),
  },
  {
    name: 'verify rejected, then verified → completed',
    input: { verify: true },
    path: [
      S('saveStart'), ev.turn(0, { text: '41' }), S('saveTurn'), S('beginVerify'), ev.verdict({ kind: 'rejected', feedback: 'Recheck.' }),
      ev.turn(1, { text: '42' }), S('saveTurn'), S('beginVerify'), ev.verdict({ kind: 'verified' }),
    ],
    drive: async (h) => void (await h.start({
      ...h.base(), prompt: 'What is 6 x 7?', model: mock([{ text: '41' }, { text: '42' }]),
      verify: ({ text }) => (text === '42' ? { status: 'verified' } : { status: 'rejected', feedback: 'Recheck.' }),
    })),
    check: (run) => {
      expect(run.last).toMatchObject({ status: 'completed', output: '42', steps: 2 });
      expect(run.legs[0]!.events.filter((e) => e.type === 'verify-result').map((e) => (e as { verdict: string }).verdict)).toEqual(['rejected', 'verified']);
    },
  },
  {
    name: 'json answer rejected by the verifier, answered again, verified → completed',
    input: { outputMode: 'json', verify: true },
    path: [
      S('saveStart'), ev.turn(0, { phase: 'finalize', text: '{"answer":41}' }), S('saveTurn'), ev.valid({ answer: 41 }),
      S('beginVerify'), ev.verdict({ kind: 'rejected', feedback: 'Recheck.' }),
      ev.turn(1, { phase: 'finalize', text: '{"answer":42}' }), S('saveTurn'), ev.valid({ answer: 42 }),
      S('beginVerify'), ev.verdict({ kind: 'verified' }),
    ],
    drive: async (h) => void (await h.start<{ answer: number }>({
      ...h.base(), prompt: 'What is 6 x 7?', output: answer, model: mock([{ text: '{"answer":41}' }, { text: '{"answer":42}' }]),
      verify: ({ output }) => (output.answer === 42 ? { status: 'verified' } : { status: 'rejected', feedback: 'Recheck.' }),
    })),
    check: (run) => expect(run.last).toMatchObject({ status: 'completed', output: { answer: 42 } }),
  },
  {
    name: 'verify inconclusive → stopped',
    input: { verify: true },
    path: [S('saveStart'), ev.turn(0, { text: 'maybe' }), S('saveTurn'), S('beginVerify'), ev.verdict({ kind: 'inconclusive', reason: 'no source' })],
    drive: async (h) => void (await h.start({
      ...h.base(), prompt: 'Is it true?', model: mock([{ text: 'maybe' }]), verify: () => ({ status: 'inconclusive', reason: 'no source' }),
    })),
    check: (run) => expect(run.last).toMatchObject({ status: 'stopped', reason: 'verification-inconclusive', stopDetails: { reason: 'no source' } }),
  },
  {
    name: 'verify rejected with no attempt left → stopped',
    input: { verify: true, maxVerifyAttempts: 1 },
    path: [S('saveStart'), ev.turn(0, { text: '41' }), S('saveTurn'), S('beginVerify'), ev.verdict({ kind: 'rejected', feedback: 'Recheck.' })],
    drive: async (h) => void (await h.start({
      ...h.base(), prompt: 'What is 6 x 7?', maxVerifyAttempts: 1, model: mock([{ text: '41' }]),
      verify: () => ({ status: 'rejected', feedback: 'Recheck.' }),
    })),
    check: (run) => expect(run.last).toMatchObject({ status: 'stopped', reason: 'verification-attempts-exhausted' }),
  },
  {
    name: 'the verifier sees the run aborted → stopped',
    input: { verify: true },
    path: [S('saveStart'), ev.turn(0, { text: '42' }), S('saveTurn'), S('beginVerify'), ev.verdict({ kind: 'aborted' })],
    drive: async (h) => void (await h.start({
      ...h.base(), prompt: 'What is 6 x 7?', model: mock([{ text: '42' }]),
      verify: () => {
        h.controller.abort();
        return { status: 'verified' };
      },
    })),
    check: (run) => expect(run.last).toMatchObject({ status: 'stopped', reason: 'aborted' }),
  },
  {
    name: 'the verifier outlives the deadline → failed',
    input: { verify: true, deadlineAt: T0 + 1_000 },
    path: [S('saveStart'), ev.turn(0, { text: '42' }), S('saveTurn'), S('beginVerify'), ev.verdict({ kind: 'deadline', error: { name: 'ExecutionPolicyError', code: 'deadline_exceeded', message: 'x' } })],
    drive: async (h) => void (await h.start({
      ...h.base(), prompt: 'What is 6 x 7?', model: mock([{ text: '42' }]), deadline: T0 + 1_000,
      verify: () => {
        h.clock.t = T0 + 1_000;
        return { status: 'verified' };
      },
    })),
    check: (run) => expect(run.last).toMatchObject({ status: 'failed', error: { code: 'deadline_exceeded' } }),
  },
  {
    name: 'the process dies while verifying → the resume verifies again, as a new attempt → completed',
    input: { verify: true },
    path: [
      S('saveStart'), ev.turn(0, { text: '42' }), S('saveTurn'),
      // Restored in verifying.beginning (the save of the attempt count): RESTORED starts a new attempt.
      RESTORE, ev.restored(), S('beginVerify'), ev.verdict({ kind: 'verified' }),
    ],
    drive: async (h) => {
      const v = hangingVerifier({ status: 'verified' });
      const options = { prompt: 'What is 6 x 7?', model: mock([{ text: '42' }]), verify: v.verify };
      await h.crash(() => h.start({ ...h.base(), ...options }), isVerifyingBeginning, v.started.promise);
      await h.resume({ ...h.base(), ...options });
      expect(v.attempts).toEqual([1, 2]);
    },
    check: (run) => expect(run.last).toMatchObject({ status: 'completed', output: '42', steps: 1 }),
  },
  {
    name: 'the process dies during the last verifier attempt → the resume stops (attempts used up)',
    input: { verify: true, maxVerifyAttempts: 1 },
    path: [S('saveStart'), ev.turn(0, { text: '42' }), S('saveTurn'), RESTORE, ev.restored()],
    drive: async (h) => {
      const v = hangingVerifier({ status: 'verified' });
      const options = { prompt: 'What is 6 x 7?', model: mock([{ text: '42' }]), verify: v.verify, maxVerifyAttempts: 1 };
      await h.crash(() => h.start({ ...h.base(), ...options }), isVerifyingBeginning, v.started.promise);
      await h.resume({ ...h.base(), ...options });
      expect(v.attempts).toEqual([1]);
    },
    check: (run) => expect(run.last).toMatchObject({ status: 'stopped', reason: 'verification-attempts-exhausted' }),
  },
  {
    name: 'drain requested during a loop step → drained at the next model-step boundary; a resume goes on → completed',
    input: { toolNames: ['lookup'] },
    path: [
      S('saveStart'), ev.drain(), ev.turn(0, { toolCalls: [call()] }), ev.callEnded('call-0-0'), S('saveStep'),
      // The boundary: drained, not the next model call. Restored in `draining` (the state that saved it), its save runs again.
      S('saveDrain'), RESTORE, ev.restored(), S('saveDrain'), ev.resume({}), ev.turn(1, { text: '42.' }),
    ],
    drive: async (h) => {
      const lease = drainingLease();
      const model = mock([afterDrain(lease, { toolCalls: [call()] }), { text: '42.' }]);
      const first = await h.start({ ...h.base(), prompt: 'Look it up.', tools: { lookup }, model, lease: lease.lease });
      expect(first.result).toMatchObject({ status: 'stopped', reason: 'drained', steps: 1 });
      expect(h.store.last()?.status).toBe('drained');
      expect(model.calls).toHaveLength(1);
      // Another executor, without the lease.
      await h.resume({ ...h.base(), prompt: 'Look it up.', tools: { lookup }, model });
    },
    check: (run) => expect(run.last).toMatchObject({ status: 'completed', output: '42.', steps: 2 }),
  },
  {
    name: 'drain requested before finalization → drained at its model-step boundary; a resume finalizes → completed',
    input: { toolNames: ['lookup'], outputMode: 'json' },
    path: [
      S('saveStart'), ev.drain(), ev.turn(0, { text: 'I know it.' }), S('saveTurn'),
      S('saveDrain'), RESTORE, ev.restored(), S('saveDrain'), ev.resume({}),
      ev.turn(1, { phase: 'finalize', text: '{"answer":42}' }), S('saveTurn'), ev.valid({ answer: 42 }),
    ],
    drive: async (h) => {
      const lease = drainingLease();
      const model = mock([afterDrain(lease, { text: 'I know it.' }), { text: '{"answer":42}' }]);
      const options = { prompt: 'Answer as JSON.', output: answer, tools: { lookup }, model };
      const first = await h.start({ ...h.base(), ...options, lease: lease.lease });
      expect(first.result).toMatchObject({ status: 'stopped', reason: 'drained', steps: 1 });
      expect(h.store.last()?.status).toBe('drained');
      await h.resume({ ...h.base(), ...options });
      // The finalization prompt was added once, before the drain: the resume goes on with it.
      expect(model.calls[1]?.messages.filter((m) => m.role === 'user')).toHaveLength(2);
    },
    check: (run) => expect(run.last).toMatchObject({ status: 'completed', output: { answer: 42 }, steps: 2 }),
  },
  {
    name: 'max-steps → stopped',
    input: { toolNames: ['lookup'], maxSteps: 1 },
    path: [S('saveStart'), ev.turn(0, { toolCalls: [call()] }), ev.callEnded('call-0-0'), S('saveStep')],
    drive: async (h) => void (await h.start({
      ...h.base(), prompt: 'Look it up.', tools: { lookup }, maxSteps: 1, model: mock([{ toolCalls: [call()] }]),
    })),
    check: (run) => expect(run.last).toMatchObject({ status: 'stopped', reason: 'max-steps', steps: 1 }),
  },
  {
    // With no store there is nothing to save a step to: the run goes from one model call to the next.
    name: 'tool loop without a session → completed, nothing saved',
    input: { toolNames: ['lookup'], plan: { durable: false, policy: false, calls: {} } },
    path: [S('saveStart'), ev.turn(0, { toolCalls: [call()] }), ev.callEnded('call-0-0'), ev.turn(1, { text: '42.' })],
    drive: async (h) => {
      const { session: _session, ...rest } = h.base();
      await h.start({ ...rest, tools: { lookup }, model: mock([{ toolCalls: [call()] }, { text: '42.' }]), prompt: 'Look it up.' });
      expect(h.store.saved).toHaveLength(0);
    },
    check: (run) => {
      expect(run.last).toMatchObject({ status: 'completed', output: '42.', steps: 2 });
      expect(run.last.messages).toContainEqual({ role: 'tool', toolCallId: 'c1', toolName: 'lookup', content: { answer: 42 } });
    },
  },
  {
    name: 'model error → failed',
    input: {},
    path: [S('saveStart'), ev.modelThrew()],
    drive: async (h) => void (await h.start({ ...h.base(), prompt: 'Hi.', model: mock([{ error: { status: 400, message: 'bad request' } }]) })),
    check: (run) => expect(run.last).toMatchObject({ status: 'failed', error: { code: 'model_call_failed' } }),
  },
  {
    name: 'transient model error → failed; retryFailed goes on from the last checkpoint → completed',
    input: {},
    path: [
      S('saveStart'), ev.modelThrew(),
      // The failed record keeps the last committed snapshot (`starting`); the retry counts the failed call as a step.
      RESTORE, ev.restored(), ev.retryFailed('loop'), S('saveStart'), ev.turn(1, { text: 'Hello.' }),
    ],
    drive: async (h) => {
      const options = { prompt: 'Hi.', maxRetries: 0, model: mock([{ error: { status: 503, message: 'overloaded' } }, { text: 'Hello.' }]) };
      const first = await h.start({ ...h.base(), ...options });
      expect(first.result).toMatchObject({ status: 'failed', retry: { phase: 'loop' } });
      await h.resume({ ...h.base(), ...options, retryFailed: true });
    },
    check: (run) => expect(run.last).toMatchObject({ status: 'completed', output: 'Hello.', steps: 2 }),
  },
  {
    name: 'store failure → failed',
    input: {},
    path: [S('saveStart'), ev.turn(0, { text: 'Hello.' }), ev.storeFailed()],
    drive: async (h) => {
      h.store.failWhen = (_, attempt) => attempt === 2;
      await h.start({ ...h.base(), prompt: 'Hi.', model: mock([{ text: 'Hello.' }]) });
    },
    check: (run) => {
      expect(run.last).toMatchObject({ status: 'failed', error: { name: 'PersistenceError', code: 'persistence_failed' } });
      // The last committed record is the one before the failed write.
      expect(run.store.saved).toHaveLength(1);
    },
  },
  {
    name: 'refusal → stopped',
    input: {},
    path: [S('saveStart'), ev.turn(0, { text: '', finishReason: 'content-filter' }), S('saveTurn')],
    drive: async (h) => void (await h.start({ ...h.base(), prompt: 'Hi.', model: mock([{ text: '', finishReason: 'content-filter' }]) })),
    check: (run) => expect(run.last).toMatchObject({ status: 'stopped', reason: 'refusal' }),
  },
  {
    name: 'answer cut off → stopped',
    input: {},
    path: [S('saveStart'), ev.turn(0, { text: 'Once upon', finishReason: 'length' }), S('saveTurn')],
    drive: async (h) => void (await h.start({ ...h.base(), prompt: 'Hi.', model: mock([{ text: 'Once upon', finishReason: 'length' }]) })),
    check: (run) => expect(run.last).toMatchObject({ status: 'stopped', reason: 'length' }),
  },
  {
    name: 'deadline passed before the model call → failed',
    input: { deadlineAt: T0 },
    path: [S('saveStart'), ev.modelRefused('deadline')],
    drive: async (h) => void (await h.start({ ...h.base(), prompt: 'Hi.', deadline: T0, model: mock([{ text: 'never' }]) })),
    check: (run) => expect(run.last).toMatchObject({ status: 'failed', error: { code: 'deadline_exceeded' } }),
  },
  {
    name: 'aborted before the model call → stopped',
    input: {},
    path: [S('saveStart'), ev.modelRefused('aborted')],
    drive: async (h) => {
      h.controller.abort();
      await h.start({ ...h.base(), prompt: 'Hi.', model: mock([{ text: 'never' }]) });
    },
    check: (run) => expect(run.last).toMatchObject({ status: 'stopped', reason: 'aborted' }),
  },
  {
    name: 'finalization: aborted before the model call → stopped',
    input: { outputMode: 'json' },
    path: [S('saveStart'), ev.modelRefused('aborted')],
    drive: async (h) => {
      h.controller.abort();
      await h.start({ ...h.base(), prompt: 'Answer as JSON.', output: answer, model: mock([{ text: 'never' }]) });
    },
    check: (run) => expect(run.last).toMatchObject({ status: 'stopped', reason: 'aborted' }),
  },
  {
    name: 'finalization: deadline passed → failed',
    input: { outputMode: 'json', deadlineAt: T0 },
    path: [S('saveStart'), ev.modelRefused('deadline')],
    drive: async (h) => void (await h.start({ ...h.base(), prompt: 'Answer as JSON.', output: answer, deadline: T0, model: mock([{ text: 'never' }]) })),
    check: (run) => expect(run.last).toMatchObject({ status: 'failed', error: { code: 'deadline_exceeded' } }),
  },
  {
    name: 'finalization: model error → failed',
    input: { outputMode: 'json' },
    path: [S('saveStart'), ev.modelThrew()],
    drive: async (h) => void (await h.start({ ...h.base(), prompt: 'Answer as JSON.', output: answer, model: mock([{ error: { status: 400 } }]) })),
    check: (run) => expect(run.last).toMatchObject({ status: 'failed', error: { code: 'model_call_failed' } }),
  },
  {
    name: 'finalization: refusal → stopped',
    input: { outputMode: 'json' },
    path: [S('saveStart'), ev.turn(0, { phase: 'finalize', text: '', finishReason: 'content-filter' }), S('saveTurn')],
    drive: async (h) => void (await h.start({
      ...h.base(), prompt: 'Answer as JSON.', output: answer, model: mock([{ text: '', finishReason: 'content-filter' }]),
    })),
    check: (run) => expect(run.last).toMatchObject({ status: 'stopped', reason: 'refusal' }),
  },
  // The run's end with memory (machines/run-memory.ts).
  ...MEMORY_RUN_SCENARIOS,
  // The chat projection at the other ends (machines/run-chat.ts).
  ...CHAT_END_SCENARIOS,
  // The handoff (machines/run-handoff.ts).
  ...HANDOFF_SCENARIOS,
];

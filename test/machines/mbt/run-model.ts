/**
 * The model of a run for the main paths: the run machine with every invoked
 * actor inert (it never answers), driven by hand with the done / error events
 * its actors would send, and with the process boundary modelled too: a save
 * captures the state that asked for it, and `@restore` starts a new actor from
 * the last captured state, as a new process resuming the stored run does.
 */
import { createActor, fromPromise, type EventObject } from 'xstate';
import { runMachine, toolCallMachine } from '../../../machines/index.js';
import { memoryIntentMachine } from '../../../machines/memory-intent.js';
import type { ModelCallOutput, RunInput, ToolCallOutput, Turn } from '../../../machines/index.js';
import { edgeOfTransition, machineOf } from './edges.js';

const pending = () => fromPromise(() => new Promise<never>(() => undefined));
const inertCall = toolCallMachine.provide({
  actors: {
    guardCall: pending(), checkArguments: pending(), decideApproval: pending(), issueApproval: pending(), admit: pending(),
    beginEffect: pending(), writeReceipt: pending(), executeTool: pending(), recordResult: pending(), projectResult: pending(),
    checkpoint: pending(),
  } as never,
});
const inertIntent = memoryIntentMachine.provide({
  actors: { planExtraction: pending(), savePlan: pending(), applyPlan: pending(), confirmPlan: pending() } as never,
});
const inertRun = runMachine.provide({
  actors: {
    toolCall: inertCall, memoryIntent: inertIntent, writeChat: pending(), saveCheckpoint: pending(), callModel: pending(), checkBatchPolicy: pending(),
    validateOutput: pending(), beginVerify: pending(), runVerifier: pending(), enterHandoff: pending(),
  } as never,
});

/** States whose invoked actor is a save of the whole record. */
const SAVE_STATES = [
  'run.starting', 'run.loop.recordingTurn', 'run.loop.checkpointing', 'run.finalizing.recordingTurn', 'run.suspending',
  'run.verifying.beginning', 'run.draining',
];

export type RunModelEvent = EventObject & Record<string, unknown>;
/** The process ends; a new one restores the last saved snapshot (`@call` sends to a call actor). */
export const RESTORE: RunModelEvent = { type: '@restore' };

export const runInput = (o: Partial<RunInput> = {}): RunInput => ({
  runId: 'mbt-run',
  messages: [{ role: 'user', content: 'Go.' }],
  maxSteps: 4,
  maxOutputAttempts: 3,
  maxVerifyAttempts: 3,
  toolNames: [],
  outputMode: 'none',
  verify: false,
  deadlineAt: null,
  // The runtime's plan for a run with a store and no execution context (src/runtime/plan.ts): no policy checks a batch.
  plan: { durable: true, policy: false, calls: {} },
  ...o,
});

const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };

/** Bookkeeping edges whose count depends on how often a call's snapshot changes: not part of a path. */
export const isBookkeeping = (key: string) => key === 'run|xstate.snapshot.*|0';

export const ev = {
  saved: (id: string): RunModelEvent => ({ type: `xstate.done.actor.${id}` }),
  turn: (step: number, t: Partial<Turn> = {}): RunModelEvent => {
    const toolCalls = t.toolCalls ?? [];
    const output: ModelCallOutput = {
      kind: 'turn',
      turn: { step, phase: 'loop', text: '', toolCalls, finishReason: toolCalls.length ? 'tool-calls' : 'stop', usage, ...t },
    };
    return { type: 'xstate.done.actor.callModel', output };
  },
  modelRefused: (kind: 'aborted' | 'deadline'): RunModelEvent => ({
    type: 'xstate.done.actor.callModel',
    output: kind === 'aborted' ? { kind } : { kind, error: { name: 'ExecutionPolicyError', code: 'deadline_exceeded', message: 'deadline' } },
  }),
  modelThrew: (): RunModelEvent => ({ type: 'xstate.error.actor.callModel', error: { name: 'ModelCallError', code: 'model_call_failed', message: 'boom' } }),
  policyOk: (): RunModelEvent => ({ type: 'xstate.done.actor.checkBatchPolicy', output: { kind: 'ok' } }),
  policyViolation: (): RunModelEvent => ({
    type: 'xstate.done.actor.checkBatchPolicy',
    output: { kind: 'violation', error: { name: 'ExecutionPolicyError', code: 'tool_not_allowed', message: 'x', toolCallId: 'c1' } },
  }),
  /** The execution budget refused the model call. */
  modelOverBudget: (): RunModelEvent => ({ type: 'xstate.done.actor.callModel', output: { kind: 'budget', details: {} } }),
  /** The resume's settle found an open call the execution policy forbids. */
  settleViolation: (): RunModelEvent => ({
    type: 'POLICY_VIOLATION', error: { name: 'ExecutionPolicyError', code: 'tool_not_allowed', message: 'x', toolCallId: 'c1' },
  }),
  callEnded: (id: string, out: Partial<ToolCallOutput> = {}): RunModelEvent => ({
    type: `xstate.done.actor.${id}`,
    output: {
      toolCallId: 'c1', toolName: 'lookup', modelStep: 0, outcome: null, modelOutput: 'ok', isError: false, reason: null, receipt: null, approval: null,
      ...out,
    },
  }),
  valid: (output: unknown): RunModelEvent => ({ type: 'xstate.done.actor.validateOutput', output: { kind: 'valid', output } }),
  invalid: (issue: string): RunModelEvent => ({ type: 'xstate.done.actor.validateOutput', output: { kind: 'invalid', issue } }),
  validateThrew: (): RunModelEvent => ({ type: 'xstate.error.actor.validateOutput', error: { name: 'TypeError', code: 'internal', message: 'not JSON' } }),
  verdict: (output: Record<string, unknown>): RunModelEvent => ({ type: 'xstate.done.actor.runVerifier', output }),
  storeFailed: (): RunModelEvent => ({ type: 'STORE_FAILED', error: { name: 'PersistenceError', code: 'persistence_failed', message: 'disk full' } }),
  resume: (answers: Record<string, unknown>): RunModelEvent => ({ type: 'RESUME', answers }),
  restored: (): RunModelEvent => ({ type: 'RESTORED' }),
  /** The lease holder was asked to stop at the next model-step boundary (a renewal carried the request). */
  drain: (): RunModelEvent => ({ type: 'DRAIN' }),
  retryFailed: (phase: 'loop' | 'finalize'): RunModelEvent => ({ type: 'RETRY_FAILED', phase }),
  /** An event for a call actor (its invoked actors' answers): the call moves, and the run hears of it as in the runtime. */
  toCall: (id: string, event: Record<string, unknown>): RunModelEvent => ({ type: '@call', id, event }),
};

export interface RunModelPath {
  /** Edge keys of the run machine, in order, bookkeeping left out. */
  edges: string[];
  value: unknown;
  status: string;
}

/** Replays a model path: the edges it takes and where it ends. */
export function runModelPath(input: RunInput, events: readonly RunModelEvent[]): RunModelPath {
  const edges: string[] = [];
  let enteredSave = false;
  const inspect = (e: unknown) => {
    const ev = e as { type: string; _transitions?: never[] };
    if (ev.type !== '@xstate.microstep') return;
    for (const t of ev._transitions ?? []) {
      const edge = edgeOfTransition(t);
      if (machineOf(edge.source) !== 'run') continue;
      if (!isBookkeeping(edge.key)) edges.push(edge.key);
      if (edge.targets.some((id) => SAVE_STATES.includes(id))) enteredSave = true;
    }
  };
  let actor = createActor(inertRun, { input, inspect });
  actor.start();
  let saved = actor.getPersistedSnapshot();
  for (const e of events) {
    if (e.type === '@restore') {
      actor.stop();
      actor = createActor(inertRun, { snapshot: saved as never, input: undefined as never, inspect });
      actor.start();
      continue;
    }
    enteredSave = false;
    if (e.type === '@call') {
      const child = (actor.getSnapshot().children as Record<string, { send(ev: unknown): void } | undefined>)[e.id as string];
      if (!child) throw new Error(`The run has no call ${String(e.id)}.`);
      child.send(e.event);
    } else actor.send(e as never);
    if (enteredSave) saved = actor.getPersistedSnapshot();
  }
  const snapshot = actor.getSnapshot();
  actor.stop();
  return { edges, value: snapshot.value, status: snapshot.status };
}

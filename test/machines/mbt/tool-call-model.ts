/**
 * The model of one tool call for @xstate/graph: the events the tool-call
 * machine can receive (the done / error events of each invoked actor with
 * every output it may produce, and the RECHECK a resume sends), restricted by
 * what the actors' contract allows in a given context, and the paths from the
 * initial state to every final state, to `unknownEffect` and to the two
 * suspended states.
 */
import { getSimplePaths, type StatePath } from '@xstate/graph';
import { assign, createActor, fromPromise, type EventObject, type SnapshotFrom } from 'xstate';
import { toolCallMachine } from '../../../machines/index.js';
import type { CallPlan, ToolCallInput } from '../../../machines/index.js';
import { edgeOfTransition } from './edges.js';

export type CallSnapshot = SnapshotFrom<typeof toolCallMachine>;
/** A model event: the machine's own RECHECK, or a done / error event of an invoked actor. */
export type ModelEvent = EventObject & { output?: { kind?: string; outcome?: string } & Record<string, unknown>; error?: unknown } & Record<string, unknown>;
export type CallPath = StatePath<CallSnapshot, ModelEvent>;

const done = (id: string, output?: Record<string, unknown>): ModelEvent => ({ type: `xstate.done.actor.${id}`, output: output as never });
const error = (id: string, code: string): ModelEvent => ({ type: `xstate.error.actor.${id}`, error: { name: 'Error', code, message: `${id} failed` } });

/** The receipt of the call under test as the runtime writes it (see receiptBase in machines/tool-call-setup.ts). */
const receiptFields = { key: '0:c1', toolCallId: 'c1', toolName: 'target', modelStep: 0, idempotent: false };
/** The operator's recorded outcome for an interrupted call: what it returned, or the error it met. */
export const RECONCILED = {
  result: { ...receiptFields, status: 'executed', rawResult: { sent: 'ada@example.com', id: 'msg-1' }, reconciled: true },
  error: { ...receiptFields, status: 'failed', error: { name: 'Error', code: 'reconciled_error', message: 'smtp down' }, reconciled: true },
};

/** Every payload each invoked actor can answer with (see src/runtime/tool-actors.ts). */
export const MODEL_EVENTS = {
  guardCall: [
    done('guardCall', { kind: 'allow' }),
    done('guardCall', { kind: 'block', reason: 'recipient not on the allowlist' }),
    done('guardCall', { kind: 'rewrite', args: { to: 'ops@example.com' } }),
    error('guardCall', 'guard_threw'),
  ],
  checkArguments: [
    done('checkArguments', { kind: 'valid' }),
    done('checkArguments', { kind: 'invalid', message: 'Invalid arguments for tool "target": /to must be integer.' }),
    error('checkArguments', 'validator_threw'),
  ],
  decideApproval: [
    done('decideApproval', { kind: 'not-needed' }),
    done('decideApproval', { kind: 'wait' }),
    done('decideApproval', { kind: 'receipt' }),
    done('decideApproval', { kind: 'approved' }),
    done('decideApproval', { kind: 'denied', reason: 'not today' }),
    error('decideApproval', 'approval_threw'),
  ],
  // The request for a server tool, or for a client tool (whose result then comes with its verdict).
  issueApproval: [
    done('issueApproval', { approvalId: 'c1@approval', token: 'token-1', client: false }),
    done('issueApproval', { approvalId: 'c1@approval', token: 'token-1', client: true }),
    error('issueApproval', 'id_source_failed'),
  ],
  admit: [
    done('admit', { kind: 'admitted' }),
    done('admit', { kind: 'refused', reason: 'deadline' }),
    done('admit', { kind: 'refused', reason: 'aborted' }),
    error('admit', 'admit_threw'),
  ],
  beginEffect: [
    done('beginEffect', { kind: 'write', idempotent: false }),
    done('beginEffect', { kind: 'replay' }),
    done('beginEffect', { kind: 'replay-failed', message: 'smtp down' }),
    done('beginEffect', { kind: 'client-result' }),
    done('beginEffect', { kind: 'await-client' }),
    done('beginEffect', { kind: 'unknown' }),
    error('beginEffect', 'begin_threw'),
  ],
  // `restarted`: the write was restored, not made by this process.
  writeReceipt: [done('writeReceipt', { kind: 'written' }), done('writeReceipt', { kind: 'restarted' }), error('writeReceipt', 'persistence_failed')],
  executeTool: [
    done('executeTool', { kind: 'result', value: { sent: 'ada@example.com', id: 'msg-1' } }),
    done('executeTool', { kind: 'threw', error: { name: 'Error', code: 'tool_failed', message: 'smtp down' } }),
    done('executeTool', { kind: 'unstorable', error: { name: 'Error', code: 'result_unstorable', message: 'it is not JSON' } }),
    done('executeTool', { kind: 'replay' }),
    done('executeTool', { kind: 'unknown' }),
    error('executeTool', 'execute_rejected'),
  ],
  recordResult: [done('recordResult'), error('recordResult', 'unknown_effect')],
  projectResult: [
    done('projectResult', { outcome: 'completed', modelOutput: 'projected', isError: false }),
    done('projectResult', { outcome: 'validation-failure', modelOutput: 'Tool result failed validation', isError: true }),
    done('projectResult', { outcome: 'projection-failure', modelOutput: 'Tool result could not be projected', isError: true }),
    done('projectResult', { outcome: 'failed', modelOutput: 'boom', isError: true }),
    done('projectResult', { outcome: 'client-result', modelOutput: 'from the client', isError: false }),
    done('projectResult', { outcome: 'unstorable-result', modelOutput: 'The tool ran, but its result could not be stored', isError: false }),
    error('projectResult', 'on_tool_result_threw'),
  ],
  checkpoint: [done('checkpoint'), error('checkpoint', 'persistence_failed')],
  RECHECK: [
    { type: 'RECHECK', verdict: { approved: true } },
    { type: 'RECHECK', verdict: { approved: false, reason: 'not today' } },
    // A gated client tool gets its verdict and its result in the same resume.
    { type: 'RECHECK', verdict: { approved: true }, clientResult: { output: { shipped: true }, isError: false } },
    { type: 'RECHECK', verdict: { approved: false, reason: 'not today' }, clientResult: { output: { shipped: true }, isError: false } },
    { type: 'RECHECK', clientResult: { output: { shipped: true }, isError: false } },
    // A call in unknownEffect whose outcome the operator recorded: the reconciled receipt answers it.
    { type: 'RECHECK', receipt: RECONCILED.result },
    { type: 'RECHECK', receipt: RECONCILED.error },
    // retryToolCallIds: run once more. A call that was never held for approval carries no verdict; one that was
    // carries the verdict the run recorded for it (or 'No approval response.' when the record kept none).
    { type: 'RECHECK', retry: true },
    { type: 'RECHECK', retry: true, verdict: { approved: true } },
    { type: 'RECHECK', retry: true, verdict: { approved: false, reason: 'No approval response.' } },
  ] as ModelEvent[],
};

const kindOf = (e: ModelEvent) => e.output?.kind;

const OUTCOME_STATUSES = ['executed', 'completed', 'failed', 'validation-failed', 'projection-failed', 'unstorable'];
/** The call's receipt records what happened (not only that the effect began). */
const hasOutcome = (c: CallSnapshot['context']) => c.receipt !== null && OUTCOME_STATUSES.includes(c.receipt.status);

/**
 * The events a call in this snapshot can receive, as the actors' contract
 * restricts them (the receipt and the approval request are in the call's
 * context, so most of it is read from there):
 * - decideApproval answers `receipt` exactly when the receipt records an
 *   outcome; from the verdict once one was delivered, and with not-needed /
 *   wait / a rejection before (a retried call stops the enumeration at the
 *   policy, so no verdict of a retry reaches it);
 * - beginEffect answers from the receipt: `replay` / `replay-failed` for a
 *   recorded outcome (a failed one replays as failed), `unknown` for an
 *   `executing` receipt that no retry asked to run again, `write` otherwise;
 *   `client-result` exactly when a client result is there; a call whose
 *   approval request or client request said which kind of tool it is (server
 *   or client) answers as that kind;
 * - executeTool runs on the context its `executing` receipt was written into,
 *   so it never finds an outcome to replay;
 * - a RECHECK in awaitingApproval carries a verdict, with the result for a
 *   client tool's request and without it otherwise (one without a verdict
 *   comes back to awaitingApproval as it was, so no simple path takes it);
 *   in awaitingClientResult a client result; in unknownEffect a retry (with no
 *   verdict, the one recorded, or the denial of a record that kept none), or
 *   the operator's reconciled receipt.
 */
export function callEvents(s: CallSnapshot): ModelEvent[] {
  const c = s.context;
  const out: ModelEvent[] = [];
  const executing = c.receipt?.status === 'executing';
  const plan = c.plan ?? null;
  for (const e of Object.values(MODEL_EVENTS).flat()) {
    if (!s.can(e as never)) continue;
    const k = kindOf(e);
    // The call's plan is the tool's: a tool that needs no approval is never held for one (nor has a
    // predicate to throw), and a tool runs here (`write`) exactly when it is not a client tool.
    if (plan) {
      if (e.type === 'xstate.done.actor.decideApproval' && k === 'wait' && !plan.approval) continue;
      if (e.type === 'xstate.error.actor.decideApproval' && !plan.approval) continue;
      if (e.type === 'xstate.done.actor.issueApproval' && e.output?.client !== !plan.executes) continue;
      if (e.type === 'xstate.done.actor.beginEffect' && (k === 'write') !== plan.executes && ['write', 'client-result', 'await-client'].includes(k!)) continue;
    }
    if (e.type === 'xstate.done.actor.decideApproval') {
      if ((k === 'receipt') !== hasOutcome(c)) continue;
      if (k !== 'receipt' && (c.verdict === null ? k === 'approved' || k === 'denied' : k !== (c.verdict.approved ? 'approved' : 'denied'))) continue;
    }
    if (e.type === 'xstate.error.actor.decideApproval' && (c.verdict !== null || hasOutcome(c))) continue;
    if (e.type === 'xstate.done.actor.beginEffect') {
      if (k === 'replay' && (!hasOutcome(c) || c.receipt!.status === 'failed')) continue;
      if (k === 'replay-failed' && c.receipt?.status !== 'failed') continue;
      if (hasOutcome(c) && k !== 'replay' && k !== 'replay-failed') continue;
      if ((k === 'unknown') !== (executing && c.retried !== true)) continue;
      if (k === 'client-result' && c.clientResult === null) continue;
      if (k === 'await-client' && c.clientResult !== null) continue;
      if (c.approval && (c.approval.client ? k === 'write' : k === 'client-result' || k === 'await-client')) continue;
      // A call the client was asked for, or answered by it, is a client tool's.
      if ((c.clientRequested || c.clientResult !== null) && k === 'write') continue;
    }
    if (e.type === 'xstate.done.actor.executeTool' && k === 'replay') continue;
    if (e.type === 'RECHECK') {
      const has = (key: string) => key in e;
      if (s.matches('unknownEffect') && (has('clientResult') || (has('verdict') && !has('retry')) || (!has('retry') && !has('receipt')))) continue;
      if (!s.matches('unknownEffect') && (has('retry') || has('receipt'))) continue;
      if (s.matches({ approval: 'awaitingApproval' }) && (!has('verdict') || has('clientResult') !== (c.approval?.client === true))) continue;
      if (s.matches({ effectIdentity: 'awaitingClientResult' }) && (!has('clientResult') || has('verdict'))) continue;
    }
    out.push(e);
  }
  return out;
}

/** A retried call is back at the policy, gated like a new call: from there on its path is the one already enumerated. */
export const isRetried = (s: CallSnapshot) => s.status === 'active' && s.matches({ policy: 'guardrails' }) && s.context.retried === true;

export const modelInput = (o: Partial<ToolCallInput> = {}): ToolCallInput => ({
  runId: 'mbt',
  modelStep: 0,
  toolCallId: 'c1',
  toolName: 'target',
  args: { to: 'ada@example.com' },
  finishReason: 'tool-calls',
  known: true,
  deadlineAt: null,
  verdict: null,
  clientResult: null,
  batchSize: 1,
  receipt: null,
  approval: null,
  plan: SERVER,
  ...o,
});

/**
 * The plans of the worlds the model is driven in (src/runtime/plan.ts decides
 * them from the options): onToolCall, onToolResult, a store and an abort
 * signal are always there, so every stage that can have work has it, except
 * as the tool says: whether it needs approval, and whether it runs here.
 */
const planFor = (o: Partial<CallPlan>): CallPlan =>
  ({ guardrails: true, argumentsInline: false, approval: false, admission: true, executes: true, idempotent: false, projects: true, durable: true, ...o });
export const SERVER = planFor({});

/** The call inputs that decide the first stages: the gate, the allowlist, and the tool's plan. */
export const INPUT_VARIANTS: { name: string; input: ToolCallInput }[] = [
  { name: 'tool-calls', input: modelInput() },
  { name: 'tool-calls, gated', input: modelInput({ plan: planFor({ approval: true }) }) },
  { name: 'tool-calls, client tool', input: modelInput({ plan: planFor({ executes: false }) }) },
  { name: 'tool-calls, gated client tool', input: modelInput({ plan: planFor({ approval: true, executes: false }) }) },
  { name: 'stop', input: modelInput({ finishReason: 'stop' }) },
  { name: 'length', input: modelInput({ finishReason: 'length' }) },
  { name: 'content-filter', input: modelInput({ finishReason: 'content-filter' }) },
  // A tool the run does not offer has no plan.
  { name: 'unknown-tool', input: modelInput({ known: false, toolName: 'nope', plan: null }) },
];

export const isTarget = (s: CallSnapshot) =>
  s.status === 'done' || s.hasTag('needs-reconciliation') || s.hasTag('suspended') || isRetried(s);

export const stateName = (value: unknown): string =>
  typeof value === 'string' ? value : Object.entries(value as object).map(([k, v]) => `${k}.${stateName(v)}`).join(',');

/** Simple paths from the initial state of `input` (or from `fromState`) to every target state. */
export function callPaths(input: ToolCallInput, fromState?: CallSnapshot): CallPath[] {
  return getSimplePaths(modelMachine, {
    input,
    ...(fromState ? { fromState } : {}),
    // A reconciled receipt leaves unknownEffect with a new receipt, so simple paths would go on through it from every
    // prefix into unknownEffect: those paths are enumerated from a few prefixes only (pathsThroughUnknownEffect).
    events: (s: CallSnapshot) => callEvents(s).filter((e) => fromState !== undefined || !('receipt' in e)),
    // Status is part of a state's identity: an errored snapshot must never alias a healthy one.
    serializeState: (s: CallSnapshot) => JSON.stringify({ v: s.value, s: s.status, c: s.context }),
    stopWhen: (s: CallSnapshot) => s.status !== 'active' || isRetried(s),
  } as never).filter((p) => isTarget(p.state as CallSnapshot)) as CallPath[];
}

/**
 * Paths that leave unknownEffect for effect identity again (a recorded outcome
 * answers the call): enumerated from each kind of unknownEffect prefix given,
 * and joined to it, so that they do not multiply by every way into unknownEffect.
 */
export function pathsThroughUnknownEffect(input: ToolCallInput, prefixes: CallPath[]): CallPath[] {
  return prefixes.flatMap((prefix) =>
    callPaths(input, prefix.state)
      .filter((suffix) => {
        const first = suffix.steps[1]?.event;
        return first?.type === 'RECHECK' && 'receipt' in first && suffix.state.status === 'done';
      })
      // joinPaths would insist on the very same state object; the suffix starts from an equal one.
      .map((suffix) => ({ state: suffix.state, steps: [...prefix.steps, ...suffix.steps.slice(1)], weight: prefix.weight + suffix.weight })));
}

export function fmtEvent(e: ModelEvent): string {
  const t = e.type.replace('xstate.done.actor.', 'done:').replace('xstate.error.actor.', 'error:');
  if (e.type === 'RECHECK') {
    const r = e as { verdict?: { approved: boolean }; clientResult?: unknown; retry?: boolean; receipt?: { status: string } };
    const parts = [
      r.verdict ? (r.verdict.approved ? 'approve' : 'deny') : '', r.clientResult ? 'client-result' : '', r.retry ? 'retry' : '',
      r.receipt ? (r.receipt.status === 'failed' ? 'reconcile-error' : 'reconcile') : '',
    ];
    return `RECHECK(${parts.filter(Boolean).join('+')})`;
  }
  const p = e.output?.kind ?? e.output?.outcome ?? '';
  const reason = e.output?.kind === 'refused' ? `:${String(e.output.reason)}` : '';
  return p ? `${t}(${p}${reason})` : t;
}

export const fmtPath = (p: CallPath) =>
  p.steps.map((s, i) => (i === 0 ? stateName(s.state.value) : `--${fmtEvent(s.event)}--> ${stateName(s.state.value)}`)).join(' ');

/** The model's events of a path, without the initial xstate.init. */
export const eventsOf = (p: CallPath): ModelEvent[] => p.steps.slice(1).map((s) => s.event);

/** The runtime's actions, as the model needs them (the permit is the runtime's; a result as it is becomes the answer). */
const MODEL_ACTIONS = {
  checkArgumentsInline: () => undefined,
  intendEffect: () => undefined,
  permitEffect: () => undefined,
  projectAsIs: assign({ outcome: 'completed' as const, modelOutput: 'as is', isError: false }) as never,
  projectInline: assign({ outcome: 'completed' as const, modelOutput: 'projected inline', isError: false }) as never,
};
const modelMachine = toolCallMachine.provide({ actions: MODEL_ACTIONS });

const pending = () => fromPromise(() => new Promise<never>(() => undefined));
const inert = toolCallMachine.provide({
  actions: MODEL_ACTIONS,
  actors: {
    guardCall: pending(), checkArguments: pending(), decideApproval: pending(), issueApproval: pending(), admit: pending(),
    beginEffect: pending(), writeReceipt: pending(), executeTool: pending(), recordResult: pending(), projectResult: pending(),
    checkpoint: pending(),
  } as never,
});

/**
 * The transitions (edge keys, in order) the machine takes along a path: the
 * path's events replayed through an actor whose invoked actors never answer,
 * with the done / error events delivered by hand, and every microstep inspected.
 */
export function expectedEdges(input: ToolCallInput, events: readonly ModelEvent[]): string[] {
  const keys: string[] = [];
  const actor = createActor(inert, {
    input,
    inspect: (ev) => {
      if (ev.type !== '@xstate.microstep') return;
      for (const t of (ev as unknown as { _transitions: never[] })._transitions) keys.push(edgeOfTransition(t).key);
    },
  });
  actor.start();
  for (const e of events) actor.send(e as never);
  actor.stop();
  return keys;
}

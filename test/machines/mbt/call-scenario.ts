/**
 * From a path of the tool-call model to the concrete world that makes the
 * real runtime take it: what the model's turn looks like, how the tool and the
 * hooks behave, what each resume answers, where the process dies.
 *
 * A path the runtime cannot take is not driven: `contract` when the actors
 * never answer that combination (the machine alone allows it), `unreachable`
 * when nothing a caller can do produces it. Each carries its reason.
 */
import type { ToolCallInput } from '../../../machines/index.js';
import { eventsOf, type CallPath, type ModelEvent } from './tool-call-model.js';

export interface CallWorld {
  finishReason: ToolCallInput['finishReason'];
  /** The model calls a tool the run offers. */
  toolKnown: boolean;
  /** What onToolCall answers for the call. */
  guard: 'allow' | 'block' | 'rewrite' | 'throw';
  /** What the arguments check finds: they match, they do not, or the (Standard Schema) validator throws. */
  args: 'valid' | 'invalid' | 'validator-throws';
  /**
   * needsApproval: false, true, a predicate that answers no, a predicate that throws, or true with an id
   * source (deps.generateId) that throws when the request's token is minted.
   */
  approval: 'none' | 'gate' | 'predicate-no' | 'predicate-throws' | 'issue-throws';
  /** The verdict the resume brings. */
  verdict: boolean | null;
  admission: 'admitted' | 'deadline' | 'aborted' | 'clock-throws';
  executor: 'server' | 'client';
  /** `unstorable`: it returns a value its receipt cannot hold (a cycle). */
  execute: 'returns' | 'throws' | 'unstorable';
  /**
   * The process dies with the call here, its `executing` receipt written:
   * right after that write (a restore finds the call in writingReceipt), or
   * while the tool runs (in execution).
   */
  crash: null | 'writingReceipt' | 'execution';
  /**
   * What the operator answers, in the resume after a plain resume stopped on
   * the interrupted call: run it again, or record the result (or error) found.
   */
  operator: 'retry' | 'reconcile' | 'reconcile-error' | null;
  /**
   * For a call that was held for approval: the run recorded its verdict, which
   * the retry passes its gate with (true); or the record kept none (the
   * driver strips it, as an older engine left it) and the retry is denied.
   */
  retryVerdict: boolean;
  /** What validation and projection make of a result. */
  projection: 'completed' | 'validation-failure' | 'projection-failure' | 'failed' | 'client-result' | 'unstorable-result';
  onToolResultThrows: boolean;
  replay: 'never' | 'idempotent';
}

export type Derived =
  | { kind: 'drive'; world: CallWorld; resumes: number; admissionLeg: number; crashLeg: number }
  | { kind: 'contract' | 'unreachable'; reason: string };

export const baseWorld = (o: Partial<CallWorld> = {}): CallWorld => ({
  finishReason: 'tool-calls',
  toolKnown: true,
  guard: 'allow',
  args: 'valid',
  approval: 'none',
  verdict: null,
  admission: 'admitted',
  executor: 'server',
  execute: 'returns',
  crash: null,
  operator: null,
  retryVerdict: false,
  projection: 'completed',
  onToolResultThrows: false,
  replay: 'never',
  ...o,
});

const STORE_FAILS_FIRST = 'the host then sends STORE_FAILED first (src/runtime/host.ts commit): the run goes to `failed` and stops every call before the rejection arrives';

/** Why a machine transition is never taken by the real runtime. Keyed by `event(payload)`. */
export const UNREACHABLE: Record<string, string> = {
  'error:beginEffect':
    'beginEffect writes nothing and reads only its input and the tool definitions, which every known tool has: nothing in it can reject',
  'error:writeReceipt': `writeReceipt rejects only when the save of the executing receipt fails; ${STORE_FAILS_FIRST}`,
  'error:recordResult':
    `recordResult rejects on a failed save (${STORE_FAILS_FIRST}) or when the call reaches \`recording\` with no receipt, ` +
    'which no transition into it allows: each one assigns the receipt it records',
  'error:checkpoint': `checkpoint rejects only on a failed save; ${STORE_FAILS_FIRST}`,
  'error:executeTool': 'executeTool catches whatever the tool throws and answers `threw`; nothing else in it can reject',
};

const key = (e: ModelEvent) => e.type.replace('xstate.done.actor.', 'done:').replace('xstate.error.actor.', 'error:');

/** The world a path needs, or why there is none. */
export function deriveWorld(path: CallPath, input: ToolCallInput): Derived {
  // What the tool is, as its plan says: one that may need approval, and one that runs here or on the client.
  const world = baseWorld({
    finishReason: input.finishReason, toolKnown: input.known,
    approval: input.plan?.approval ? 'gate' : 'none', executor: input.plan && !input.plan.executes ? 'client' : 'server',
  });
  let rechecks = 0;
  let admissionLeg = 0;
  let crashLeg = -1;
  let route: 'execute' | 'client' | 'reconciled' | null = null;
  const contract = (reason: string): Derived => ({ kind: 'contract', reason });
  const unreachable = (reason: string): Derived => ({ kind: 'unreachable', reason });
  const crash = (at: 'writingReceipt' | 'execution') => {
    world.crash = at;
    crashLeg = rechecks;
  };
  for (const e of eventsOf(path)) {
    const k = e.output?.kind;
    switch (e.type) {
      case 'xstate.done.actor.guardCall':
        world.guard = k as CallWorld['guard'];
        break;
      case 'xstate.error.actor.guardCall':
        world.guard = 'throw';
        break;
      case 'xstate.done.actor.checkArguments':
        world.args = k as 'valid' | 'invalid';
        break;
      case 'xstate.error.actor.checkArguments':
        world.args = 'validator-throws';
        break;
      case 'xstate.done.actor.decideApproval':
        if (k === 'wait') world.approval = 'gate';
        // A tool that may need approval, whose predicate says this call does not.
        else if (k === 'not-needed' && world.approval === 'gate') world.approval = 'predicate-no';
        break;
      case 'xstate.error.actor.decideApproval':
        world.approval = 'predicate-throws';
        break;
      case 'xstate.done.actor.issueApproval':
        if (e.output?.client === true) world.executor = 'client';
        break;
      case 'xstate.error.actor.issueApproval':
        world.approval = 'issue-throws';
        break;
      case 'RECHECK': {
        const r = e as { verdict?: { approved: boolean }; clientResult?: unknown; retry?: boolean; receipt?: { status: string } };
        if (world.crash !== null) {
          // The call is in unknownEffect: the operator's answer.
          if (r.retry) {
            if (r.verdict && world.approval !== 'gate') {
              return contract('a retried call that was never held for approval is retried with no verdict: its gate decides as for a new call (src/agent/run-agent.ts verdictsForRetries)');
            }
            if (!r.verdict && world.approval === 'gate') {
              return contract('a retried call that was held for approval is retried with the verdict the run recorded, or denied when the record kept none (src/agent/run-agent.ts verdictsForRetries)');
            }
            world.retryVerdict = r.verdict?.approved === true;
            world.operator = 'retry';
          } else {
            world.operator = r.receipt?.status === 'failed' ? 'reconcile-error' : 'reconcile';
            route = 'reconciled';
          }
          break;
        }
        if (r.verdict) world.verdict = r.verdict.approved;
        if (r.clientResult) world.executor = 'client';
        rechecks += 1;
        break;
      }
      case 'xstate.done.actor.admit':
        admissionLeg = rechecks;
        world.admission = k === 'admitted' ? 'admitted' : (e.output!.reason as 'deadline' | 'aborted');
        break;
      case 'xstate.error.actor.admit':
        admissionLeg = rechecks;
        world.admission = 'clock-throws';
        break;
      case 'xstate.done.actor.beginEffect':
        if (k === 'write') route = 'execute';
        else if (k === 'client-result' || k === 'await-client') {
          route = 'client';
          world.executor = 'client';
        }
        break;
      case 'xstate.done.actor.writeReceipt':
        // A first run of a tool that runs here opened its receipt on the way in, with no beginEffect before.
        route ??= 'execute';
        // Restored right after the write: the process died there.
        if (k === 'restarted') crash('writingReceipt');
        break;
      case 'xstate.done.actor.executeTool':
        route ??= 'execute';
        if (k === 'threw') world.execute = 'throws';
        else if (k === 'unstorable') world.execute = 'unstorable';
        // Restored while the tool ran: the process died during the effect.
        else if (k === 'unknown') crash('execution');
        break;
      case 'xstate.done.actor.projectResult': {
        const outcome = e.output!.outcome as CallWorld['projection'];
        const tool = route === 'execute';
        if ((tool && world.execute === 'unstorable') !== (outcome === 'unstorable-result')) {
          return contract(outcome === 'unstorable-result'
            ? "only a result a tool returned is unstorable: a client's or an operator's result arrives as JSON"
            : 'a receipt that records an unstorable result projects as `unstorable-result`');
        }
        const thrown = tool && world.execute === 'throws';
        if (thrown !== (outcome === 'failed')) {
          return contract(thrown
            ? 'a receipt that records a thrown error projects as `failed`'
            : 'projectResult answers `failed` only for a receipt that records a thrown error (a reconciled error replays as failed from beginEffect)');
        }
        if ((route === 'client') !== (outcome === 'client-result') && outcome !== 'validation-failure' && outcome !== 'projection-failure') {
          return contract(route === 'client'
            ? 'a client result that passes validation and projection ends as `client-result`'
            : "only a client tool's result ends as `client-result`");
        }
        world.projection = outcome;
        break;
      }
      case 'xstate.error.actor.projectResult':
        if (world.execute !== 'returns' && route === 'execute') {
          return contract('onToolResult is not called for a receipt that records a thrown error or an unstorable result, so projection cannot reject');
        }
        world.onToolResultThrows = true;
        break;
      default: {
        const reach = UNREACHABLE[key(e)];
        if (reach) return unreachable(reach);
      }
    }
  }
  // A path that ends in unknownEffect: the operator's retry takes the call on from there.
  if (world.crash !== null && world.operator === null) world.operator = 'retry';
  return { kind: 'drive', world, resumes: rechecks, admissionLeg, crashLeg };
}

/** What the model sees for a call that ended in `state`, given the world (a regex or exact JSON value). */
export function expectedModelOutput(state: string, w: CallWorld): RegExp | unknown {
  const to = w.guard === 'rewrite' ? 'ops@example.com' : 'ada@example.com';
  switch (state) {
    case 'policyViolation': return 'Tool "nope" is not available.';
    case 'blocked': return 'Tool call blocked: recipient not on the allowlist';
    case 'invalidArguments': return /^Invalid arguments for tool "target": \/to must be integer\. /;
    case 'unstorableResult': return /^The tool ran, but its result could not be stored: it is not JSON \(Converting circular structure to JSON\)\. Do not call it again/;
    case 'denied': return 'Tool call denied. Reason: not today';
    case 'validationFailure': return /^Tool result failed validation: /;
    case 'projectionFailure': return /^Tool result could not be projected: cannot render$/;
    case 'clientResult': return 'client says {"shipped":true}';
    case 'completed': return `sent to ${to}`;
    case 'failed':
      if (w.guard === 'throw') return 'onToolCall failed';
      if (w.args === 'validator-throws') return 'argument validator failed';
      if (w.admission === 'clock-throws') return 'clock unavailable';
      if (w.approval === 'predicate-throws') return 'approval predicate failed';
      if (w.approval === 'issue-throws') return 'id source failed';
      if (w.onToolResultThrows) return 'onToolResult failed';
      if (w.operator === 'reconcile-error') return 'smtp down';
      if (w.execute === 'throws') return 'smtp down';
      return /./;
    default: return /./;
  }
}

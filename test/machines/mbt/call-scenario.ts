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
import { eventsOf, MODEL_EVENTS, type CallPath, type ModelEvent } from './tool-call-model.js';

export interface CallWorld {
  finishReason: ToolCallInput['finishReason'];
  /** The model calls a tool the run offers. */
  toolKnown: boolean;
  /** What onToolCall answers for the call. */
  guard: 'allow' | 'block' | 'rewrite' | 'throw';
  /** What the arguments check finds: they match, they do not, or the (Standard Schema) validator throws. */
  args: 'valid' | 'invalid' | 'validator-throws';
  /** needsApproval: false, true, or a predicate that throws. */
  approval: 'none' | 'gate' | 'predicate-throws';
  /** The verdict the resume brings. */
  verdict: boolean | null;
  admission: 'admitted' | 'deadline' | 'aborted' | 'clock-throws';
  executor: 'server' | 'client';
  /** `unstorable`: it returns a value its receipt cannot hold (a cycle). */
  execute: 'returns' | 'throws' | 'unstorable';
  /** The process dies with the call here (a restore finds an `executing` receipt). */
  crash: null | 'beginning' | 'execution';
  /**
   * What the operator answers, one resume each, after a plain resume stopped on
   * the interrupted call: run it again, or record the result (or error) found.
   * `['retry', 'reconcile']`: the retry's process dies too, at `retryDiesIn`.
   */
  operator: ('retry' | 'reconcile' | 'reconcile-error')[];
  /**
   * Where the retry's process dies when the operator answers twice:
   * - 'unknownEffect': once a save shows the call in unknownEffect (restored
   *   without its retry permit, before the retry reached it);
   * - 'approval.deciding': once a save shows the call back in approval.deciding,
   *   its receipt still `executing` from the first run. The save is a second
   *   call's: the turn has two calls, both interrupted and both retried. The
   *   operator's recorded outcome then answers the call at the approval stage:
   *   the next resume restores it before the effect with an outcome receipt, and
   *   decideApproval answers `receipt`. This is the only way a call reaches
   *   that branch: an envelope holds the snapshot and the receipts of one
   *   moment, so the save that records an outcome the call itself produced
   *   shows it past the effect (in resultReceipt.recording), and only a retried
   *   call comes back before the effect with a receipt that is not its first.
   */
  retryDiesIn: 'unknownEffect' | 'approval.deciding';
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
  | {
      kind: 'drive'; world: CallWorld; resumes: number; admissionLeg: number; crashLeg: number;
      /**
       * The model's events the call took before the path (a retried call's first
       * run, up to its retry): from the retry on, the call takes the path.
       */
      lead: ModelEvent[];
    }
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
  operator: [],
  retryDiesIn: 'unknownEffect',
  retryVerdict: false,
  projection: 'completed',
  onToolResultThrows: false,
  replay: 'never',
  ...o,
});

/** Why a machine transition is never taken by the real runtime. Keyed by `event(payload)`. */
export const UNREACHABLE: Record<string, string> = {
  'error:beginEffect':
    'beginEffect rejects only when the save of the executing receipt fails; the host then sends STORE_FAILED first (src/runtime/host.ts commit), the run goes to `failed` and stops every call before the rejection arrives',
  'error:recordResult':
    'recordResult rejects on a failed save (the run stops the call first, as for beginEffect) or when a restore finds the call in `recording` with an `executing` receipt, which no save captures: the receipt changes in the same tick the call enters `recording`',
  'error:checkpoint': 'checkpoint rejects only on a failed save; the run stops the call first (STORE_FAILED)',
  'error:executeTool': 'executeTool catches whatever the tool throws and answers `threw`; nothing else in it can reject',
  'gated-client-split':
    'a gated client tool is pending as an approval and a client call at once, and a resume that does not answer both leaves the run as it was (src/runtime/host.ts pending, src/agent/run-agent.ts storedSuspension): its verdict never arrives without its result',
};

const key = (e: ModelEvent) => e.type.replace('xstate.done.actor.', 'done:').replace('xstate.error.actor.', 'error:');

/** The payload of an invoked actor's done event, as the model has it. */
const doneEvent = (actor: keyof typeof MODEL_EVENTS, kind: string): ModelEvent =>
  MODEL_EVENTS[actor].find((e) => e.type === `xstate.done.actor.${actor}` && e.output?.kind === kind)!;

/** The world a path needs, or why there is none. */
export function deriveWorld(path: CallPath, input: ToolCallInput): Derived {
  const world = baseWorld({ finishReason: input.finishReason, toolKnown: input.known });
  let rechecks = 0;
  let admissionLeg = 0;
  let crashLeg = -1;
  let decisions = 0;
  let lastRecheck: 'verdict' | 'verdict+client' | 'client' | 'empty' | null = null;
  let route: 'execute' | 'client' | 'receipt' | 'reconciled' | null = null;
  let replayedBy: 'beginEffect' | 'executeTool' | null = null;
  const contract = (reason: string): Derived => ({ kind: 'contract', reason });
  const unreachable = (reason: string): Derived => ({ kind: 'unreachable', reason });
  const crash = (at: 'beginning' | 'execution') => {
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
        decisions += 1;
        if (decisions === 1) {
          if (k === 'not-needed') world.approval = 'none';
          else if (k === 'wait') world.approval = 'gate';
          else if (k === 'receipt') {
            // The call ran, died during its effect with a second call of the turn, was retried with it, and that
            // retry died with the call back in approval.deciding; the operator recorded what happened. The lead is
            // the first run up to the retry; from the retry on, the call takes this path.
            crash('execution');
            world.operator = ['retry', 'reconcile'];
            world.retryDiesIn = 'approval.deciding';
            route = 'receipt';
          }
        } else if (lastRecheck === 'empty') {
          return unreachable(
            'a call waits for its verdict only before its first effect (a retried call carries the verdict stored for it), ' +
            'so no receipt of it records an outcome while it waits; a resume without its verdict leaves the run as it was',
          );
        }
        break;
      case 'xstate.error.actor.decideApproval':
        if (decisions > 0) return contract('a resume without a verdict reaches decideApproval only for a call answered by its receipt, which is checked before the predicate');
        world.approval = 'predicate-throws';
        break;
      case 'RECHECK': {
        const r = e as { verdict?: { approved: boolean }; clientResult?: unknown; retry?: boolean };
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
          } else {
            // Recorded while the retry's process died with the call in unknownEffect.
            world.operator.push('reconcile');
            route = 'reconciled';
          }
          break;
        }
        if (r.verdict) world.verdict = r.verdict.approved;
        if (r.clientResult) world.executor = 'client';
        lastRecheck = r.verdict ? (r.clientResult ? 'verdict+client' : 'verdict') : r.clientResult ? 'client' : 'empty';
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
        if (route === 'receipt' || route === 'reconciled') {
          replayedBy = 'beginEffect';
          if (k === 'replay-failed') world.operator[world.operator.length - 1] = 'reconcile-error';
          else if (k !== 'replay') return contract(`beginEffect answers a recorded outcome with replay / replay-failed, never ${k}`);
          break;
        }
        if (k === 'permit') route = 'execute';
        else if (k === 'client-result') route = 'client';
        else if (k === 'await-client') {
          if (world.verdict !== null) return unreachable(UNREACHABLE['gated-client-split']!);
          route = 'client';
          world.executor = 'client';
        } else if (k === 'replay' || k === 'replay-failed') {
          // The process died after the executing receipt; the operator recorded what happened.
          crash('beginning');
          world.operator = [k === 'replay' ? 'reconcile' : 'reconcile-error'];
          route = 'reconciled';
          replayedBy = 'beginEffect';
        } else if (k === 'unknown') {
          // The process died after the executing receipt; the operator asked for a retry. The restored call starts
          // beginEffect again before the settle hands it the retry (src/agent/run-agent.ts: retry keys are taken
          // only once every restored call is at rest), so it finds no permit and goes to unknownEffect, where the
          // retry reaches it.
          crash('beginning');
          world.operator = ['retry'];
        } else return unreachable(UNREACHABLE['error:beginEffect']!);
        break;
      case 'xstate.done.actor.executeTool':
        if (k === 'threw') world.execute = 'throws';
        else if (k === 'replay') {
          // The process died during the effect; the operator recorded what happened.
          crash('execution');
          world.operator = ['reconcile'];
          route = 'reconciled';
          replayedBy = 'executeTool';
        } else if (k === 'unknown') {
          // The process died during the effect; the operator asked for a retry, which finds no permit.
          crash('execution');
          world.operator = ['retry'];
        }
        break;
      case 'xstate.done.actor.projectResult': {
        const outcome = e.output!.outcome as CallWorld['projection'];
        if (outcome === 'unstorable-result') {
          if (route !== 'execute' || replayedBy !== null) {
            return contract("only a result a tool returned is unstorable: a client's or an operator's result arrives as JSON");
          }
          if (world.execute === 'throws') return contract('a tool that threw returned no result to store');
          world.execute = 'unstorable';
          world.projection = outcome;
          break;
        }
        if (outcome === 'failed' && replayedBy === 'beginEffect') {
          return contract('beginEffect answers a receipt that records an error with replay-failed, so a receipt it replays never projects as `failed`');
        }
        if (route === 'reconciled' && outcome === 'failed') world.operator[world.operator.length - 1] = 'reconcile-error';
        const thrown = world.execute === 'throws' || world.operator.includes('reconcile-error');
        if (thrown !== (outcome === 'failed')) {
          return contract(thrown
            ? 'a receipt that records a thrown error projects as `failed`'
            : 'projectResult answers `failed` only for a receipt that records a thrown error');
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
        if (world.execute === 'throws') return contract('onToolResult is not called for a receipt that records a thrown error, so projection cannot reject');
        world.onToolResultThrows = true;
        break;
      default: {
        const reach = UNREACHABLE[key(e)];
        if (reach) return unreachable(reach);
      }
    }
  }
  // A call answered at the approval stage by its receipt: its first run (no gate, admitted, died in the effect) and the
  // operator's retry (no verdict stored: "No approval response.", which a call with no gate never reads).
  const lead: ModelEvent[] = route === 'receipt'
    ? [
        doneEvent('guardCall', world.guard), doneEvent('checkArguments', 'valid'), doneEvent('decideApproval', 'not-needed'),
        doneEvent('admit', 'admitted'), doneEvent('beginEffect', 'permit'), doneEvent('executeTool', 'unknown'),
        MODEL_EVENTS.RECHECK.find((r) => 'retry' in r && !('verdict' in r))!,
      ]
    : [];
  return { kind: 'drive', world, resumes: rechecks, admissionLeg, crashLeg, lead };
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
      if (w.onToolResultThrows) return 'onToolResult failed';
      if (w.operator.includes('reconcile-error')) return 'smtp down';
      if (w.execute === 'throws') return 'smtp down';
      return /./;
    default: return /./;
  }
}

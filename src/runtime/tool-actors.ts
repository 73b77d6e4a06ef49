/**
 * The tool-call machine's actors. Each takes the call's context as input (the
 * three save legs only the fields they read: see ReceiptWriteInput) and
 * returns what it decided or did; none reads or writes state outside its input
 * and output. Each is pure, a save of the record as the run holds it, or the
 * effect itself, which runs only under a permit the `executing` receipt write
 * issued in this process.
 */
import { assign, enqueueActions } from 'xstate';
import { CairnError, serializeError } from '../errors/index.js';
import { toolCallMachine } from '../../machines/index.js';
import type {
  AdmitOutput, ApprovalOutput, ArgumentsOutput, BeginEffectOutput, CheckpointInput, ExecuteOutput, GuardOutput,
  IssueApprovalOutput, Json, PersistReceiptOutput, ProjectOutput, ReceiptWriteInput, RecordResultInput, ToolCallContext,
} from '../../machines/index.js';
import { approvalIdFor, receiptHasOutcome, receiptKey } from '../agent/envelope.js';
import { toJson } from '../agent/json.js';
import type { ToolParameters } from '../agent/arguments.js';
import type { NormalizedOptions } from '../agent/options.js';
import { check } from '../agent/schema.js';
import type { AgentToolReceipt, JsonValue, Message, ToolExecuteContext } from '../agent/types.js';
import { deadlinePassed, effectSignal, legActor, legOf, type Leg } from './host-state.js';
import { projectsResult } from './plan.js';
import { capForModel, storableResult, unstorableMessage } from './tool-results.js';
import { outcomeUnknown } from '../mcp/errors.js';
import { mcpProjection } from '../mcp/projection.js';
import type { RunChildInput, RunChildOutput } from '../../machines/index.js';
import { runChild } from '../delegation/agent-tool-run.js';

const keyOf = (c: ReceiptWriteInput) => receiptKey(c.modelStep, c.toolCallId);
const receiptOf = (c: ToolCallContext) => (c.receipt ?? undefined) as AgentToolReceipt | undefined;

/**
 * What a tool's execute is handed. Its `signal` is made when the tool first reads it: an AbortSignal costs about
 * 4 µs to make (see lazy-promise.ts), and most tools never read one.
 */
function toolContext(leg: Leg, c: ToolCallContext, signalOf: () => AbortSignal): ToolExecuteContext {
  let signal: AbortSignal | undefined;
  return {
    toolCallId: c.toolCallId,
    modelStep: c.modelStep,
    messages: leg.transcript() as Message[],
    get signal() {
      return (signal ??= signalOf());
    },
    context: leg.opts.toolContexts[c.toolName],
  };
}

/** A user callback's error reaches the model and the checkpoint only as plain, redacted data. */
function redacting<A extends unknown[], R>(body: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args) => {
    try {
      return await body(...args);
    } catch (error) {
      throw serializeError(error, 'callback_failed');
    }
  };
}

/**
 * The answer of a result that no validation, user projection or onToolResult sees: the result itself (or the
 * engine's own projection of it, pure and total: see CallPlan.projectsInline), capped for the model.
 */
function answerAsIs(leg: Leg, c: ToolCallContext, project: (raw: unknown) => unknown = (raw) => raw) {
  const receipt = receiptOf(c)!;
  leg.emit({ type: 'tool-output', step: c.modelStep, toolCallId: c.toolCallId, toolName: c.toolName, rawResult: receipt.rawResult });
  const projection = toJson<Json>(project(receipt.rawResult ?? null));
  return {
    outcome: 'completed' as const,
    modelOutput: capForModel(projection as JsonValue, leg.opts.maxToolResultChars) as Json,
    isError: false,
    receipt: { ...c.receipt!, status: 'completed' as const, modelOutput: projection },
  };
}

/** The tool-call machine with its actors, provided once per process. */
export const toolCallLogic = toolCallMachine.provide({
  actions: {
    // A JSON Schema check runs no user code and needs no wait: it is made on the transition into the policy stage.
    // (A check that answers with a promise, which a JSON Schema's never does, is left to the stage's actor.)
    checkArgumentsInline: assign(({ context: c, system }) => {
      let verdict: ReturnType<ToolParameters['check']> | undefined;
      try {
        verdict = legOf(system).opts.parameters[c.toolName]?.check(c.args);
      } catch {
        verdict = undefined;
      }
      if (!verdict || verdict instanceof Promise) return { argumentsChecked: null };
      return { argumentsChecked: verdict.ok ? { valid: true as const } : { valid: false as const, message: verdict.message } };
    }),
    // The permit is the process's: these run on the transition that passes the effect-identity stage without its
    // actor. They are written as enqueueActions (that enqueue nothing) so that they take effect while the transition
    // is resolved: a call spawned straight into its receipt write or its effect starts that invocation before XState
    // runs the plain actions of its first transition. (An assignment that changes nothing would do the same, but
    // XState copies the whole context and the snapshot for every assignment.)
    intendEffect: enqueueActions(({ context, system }) => {
      legOf(system).permits.intend(keyOf(context));
    }),
    permitEffect: enqueueActions(({ context, system }) => {
      legOf(system).permits.grant(keyOf(context));
    }),
    projectAsIs: assign(({ context, system }) => answerAsIs(legOf(system), context)),
    projectInline: assign(({ context, system }) => answerAsIs(legOf(system), context, mcpProjection)),
  },
  actors: {
    // Stage 2: the onToolCall guardrails block or rewrite.
    guardCall: legActor<GuardOutput, ToolCallContext>(redacting(async (leg, { input: c }) => {
      const guard = leg.opts.raw.onToolCall;
      if (!guard) return { kind: 'allow' };
      const decision = await guard({ toolCallId: c.toolCallId, toolName: c.toolName, args: c.args as JsonValue, modelStep: c.modelStep });
      if (!decision || decision.action === 'allow') return { kind: 'allow' };
      if (decision.action === 'block') return { kind: 'block', reason: decision.reason };
      return { kind: 'rewrite', args: toJson<Json>(decision.args) };
    })),

    // Between policy and approval: the arguments against the tool's parameters. Invalid ones are never offered for approval.
    checkArguments: legActor<ArgumentsOutput, ToolCallContext>(redacting(async (leg, { input: c }) => {
      const parameters = leg.opts.parameters[c.toolName];
      if (!parameters) return { kind: 'valid' };
      const verdict = await parameters.check(c.args);
      return verdict.ok ? { kind: 'valid' } : { kind: 'invalid', message: verdict.message };
    })),

    // Stage 3: a recorded outcome skips the gate. A verdict the run asked for decides, even when a
    // predicate would now answer otherwise: a denial is final, an approval stands. Otherwise needsApproval.
    decideApproval: legActor<ApprovalOutput, ToolCallContext>(redacting(async (leg, args) => {
      const c = args.input;
      if (receiptHasOutcome(receiptOf(c))) return { kind: 'receipt' };
      if (c.verdict !== null) {
        return c.verdict.approved ? { kind: 'approved' } : { kind: 'denied', reason: c.verdict.reason ?? 'Not approved.' };
      }
      // The execution context's requireApproval holds the call whatever the tool's own gate says.
      if (leg.opts.execution?.requiresApproval(c.toolName)) return { kind: 'wait' };
      const gate = leg.opts.tools[c.toolName]!.needsApproval;
      const needed = typeof gate === 'function' ? await gate(c.args, toolContext(leg, c, () => args.signal)) : Boolean(gate);
      return needed ? { kind: 'wait' } : { kind: 'not-needed' };
    })),

    // The request's id is bound to the run, the step, the call, the tool and its arguments; its token is fresh.
    issueApproval: legActor<IssueApprovalOutput, ToolCallContext>(redacting(async (leg, { input: c }) => ({
      approvalId: approvalIdFor(leg.runId, c),
      token: leg.opts.generateId(),
      client: typeof leg.opts.tools[c.toolName]?.execute !== 'function',
    }))),

    // Stage 4: cancellation and the deadline, right before the effect.
    admit: legActor<AdmitOutput, ToolCallContext>(redacting(async (leg, { input: c }) => {
      if (deadlinePassed(leg, c.deadlineAt)) return { kind: 'refused', reason: 'deadline' };
      if (leg.signal.aborted) return { kind: 'refused', reason: 'aborted' };
      return { kind: 'admitted' };
    })),

    // Stage 5: effect identity. The receipt decides; a fresh `executing` receipt is asked for, and its write issues the permit.
    beginEffect: legActor<BeginEffectOutput, ToolCallContext>(async (leg, { input: c }) => {
      const tool = leg.opts.tools[c.toolName]!;
      const existing = receiptOf(c);
      if (existing && existing.status === 'failed') {
        const message = existing.error ? existing.error.message : 'Tool call failed.';
        return { kind: 'replay-failed', message: capForModel(message, leg.opts.maxToolResultChars) as string };
      }
      if (receiptHasOutcome(existing)) return { kind: 'replay' };
      if (typeof tool.execute !== 'function') {
        return c.clientResult ? { kind: 'client-result' } : { kind: 'await-client' };
      }
      const idempotent = tool.replay === 'idempotent';
      // An interrupted call runs again only when idempotent or when this resume asked for it (once: the write takes the ask).
      if (existing && existing.status === 'executing' && !existing.idempotent && c.retried !== true) {
        return { kind: 'unknown' };
      }
      leg.permits.intend(keyOf(c));
      return { kind: 'write', idempotent };
    }),

    // The `executing` receipt (already in the record the run holds) is made durable; only then is the effect permitted.
    writeReceipt: legActor<PersistReceiptOutput, ReceiptWriteInput>(async (leg, { input: c }) => {
      if (!leg.bugs.skipExecutingReceipt) await leg.save();
      return leg.permits.issue(keyOf(c)) ? { kind: 'written' } : { kind: 'restarted' };
    }),

    // Stage 6: the effect. Without a permit this is a restart after a restore: never run, re-decide.
    executeTool: legActor<ExecuteOutput, ToolCallContext>(async (leg, args) => {
      const c = args.input;
      const tool = leg.opts.tools[c.toolName]!;
      if (!leg.permits.take(keyOf(c)) && !leg.bugs.ignoreEffectPermit) {
        if (receiptHasOutcome(receiptOf(c))) return { kind: 'replay' };
        // Only a tool marked idempotent may run again under the same identity, and never in a leg already cancelled.
        if (tool.replay !== 'idempotent' || leg.signal.aborted) return { kind: 'unknown' };
      }
      let value: unknown;
      try {
        value = await tool.execute!(c.args, toolContext(leg, c, () => effectSignal(leg, args.signal, c.deadlineAt)));
      } catch (error) {
        // A call cut off while its server had it (an MCP server that died or timed out): nobody knows whether it landed.
        if (outcomeUnknown(error)) return { kind: 'unknown' };
        return { kind: 'threw', error: serializeError(error, 'tool_failed') };
      }
      // The tool returned: whatever its result is, its effect happened. One that cannot be stored is recorded as such.
      const stored = storableResult(value, leg.opts.maxReceiptBytes, c.toolCallId);
      return stored.kind === 'result' ? { kind: 'result', value: stored.value as Json } : stored;
    }),

    // Stage 7a: the raw result (or the error, or the client's answer), already in the record, is committed first.
    // (Its input carries the receipt's status and error, not the result: see RecordResultInput.)
    recordResult: legActor<void, RecordResultInput>(async (leg, { input: c }) => {
      const receipt = c.receipt ?? undefined;
      if (!receipt) throw serializeError(new CairnError('unknown_effect', 'The result of this call was lost before its receipt was written.', { fault: 'library' }));
      if (receipt.status === 'unstorable') {
        leg.emit({
          type: 'warning', setting: receipt.error?.code === 'result_too_large' ? 'maxReceiptBytes' : 'tools', toolCallId: c.toolCallId,
          message: `Tool "${c.toolName}" (call ${c.toolCallId}) ran, but its result could not be stored: ${receipt.error?.message}. ` +
            'Its receipt records that it ran (status unstorable), and the model was told not to call it again.',
        });
      }
      // Committed before any validation, projection or onToolResult runs. With
      // none of them (or for an error or an unstorable result, which none sees)
      // nothing runs between here and the call's checkpoint, which commits the
      // receipt instead.
      const tool = leg.opts.tools[c.toolName];
      if (receipt.status === 'failed' || receipt.status === 'unstorable' || !tool || projectsResult(leg.opts as NormalizedOptions<unknown>, tool)) {
        await leg.save();
      }
    }),

    // Stage 7b: validation, the tool's projection, then onToolResult (which changes only the model's copy).
    projectResult: legActor<ProjectOutput, ToolCallContext>(async (leg, { input: c }) => {
      const receipt = receiptOf(c)!;
      const tool = leg.opts.tools[c.toolName]!;
      let updated: AgentToolReceipt | undefined;
      // What enters the model's history is capped (maxToolResultChars); the receipt keeps the whole raw result.
      const end = (outcome: ProjectOutput['outcome'], modelOutput: JsonValue | string, isError: boolean): ProjectOutput => ({
        outcome, modelOutput: capForModel(modelOutput, leg.opts.maxToolResultChars) as Json, isError,
        ...(updated ? { receipt: updated as ProjectOutput['receipt'] } : {}),
      });
      if (receipt.status === 'failed') return end('failed', receipt.error?.message ?? 'Tool call failed.', true);
      // The tool ran; there is no result to validate, project or show to onToolResult.
      // (Its message is the engine's own, and short: never cut, so the model always reads "do not call it again".)
      if (receipt.status === 'unstorable') return { outcome: 'unstorable-result', modelOutput: unstorableMessage(receipt.error), isError: false };
      leg.emit({ type: 'tool-output', step: c.modelStep, toolCallId: c.toolCallId, toolName: c.toolName, rawResult: receipt.rawResult });
      let projection: JsonValue | string;
      let outcome: ProjectOutput['outcome'];
      let isError = receipt.isError === true;
      if (receipt.status === 'validation-failed' || receipt.status === 'projection-failed') {
        projection = receipt.modelOutput ?? '';
        outcome = receipt.status === 'validation-failed' ? 'validation-failure' : 'projection-failure';
        isError = true;
      } else {
        const checked = isError ? { ok: true as const, value: receipt.rawResult } : await check(receipt.rawResult, tool.outputSchema, tool.validateResult);
        if (!checked.ok) {
          projection = `Tool result failed validation: ${checked.issue}`;
          outcome = 'validation-failure';
          isError = true;
          updated = { ...receipt, status: 'validation-failed', modelOutput: projection };
        } else {
          try {
            projection = toJson<JsonValue>(tool.toModelOutput && !isError ? await tool.toModelOutput(checked.value) : checked.value);
            outcome = receipt.client ? 'client-result' : 'completed';
            updated = { ...receipt, status: 'completed', modelOutput: projection };
          } catch (error) {
            projection = `Tool result could not be projected: ${serializeError(error).message}`;
            outcome = 'projection-failure';
            isError = true;
            updated = { ...receipt, status: 'projection-failed', modelOutput: projection };
          }
        }
      }
      const guard = leg.opts.raw.onToolResult;
      if (guard) {
        const replaced = await guard({ toolCallId: c.toolCallId, toolName: c.toolName, modelStep: c.modelStep, output: projection, isError });
        if (replaced !== undefined) projection = toJson<JsonValue>(replaced);
      }
      return end(outcome, projection, isError);
    }),

    // Stage 8: the answer is in the run's record before the run goes on from it.
    // A lone call's checkpoint is the run's step checkpoint (or its terminal
    // write), which follows as soon as the call ends. (Decided by the batch's
    // size, not by which siblings are still open, so that how many saves a run
    // makes does not depend on timing.)
    checkpoint: legActor<void, CheckpointInput>(async (leg, { input: c }) => {
      if (c.batchSize > 1) await leg.save();
    }),

    // A sub-agent's effect: its child run, driven to its next rest (machines/sub-agent.ts).
    runChild: legActor<RunChildOutput, RunChildInput>((leg, { input, signal }) => runChild(leg, input, signal)),
  },
});

/**
 * The tool-call machine's actors. Each is either pure, an idempotent write
 * keyed by effect identity, or the effect itself, which runs only with a
 * permit that the `executing` receipt write issued in this process.
 */
import { fromPromise } from 'xstate';
import { serializeError } from '../errors/index.js';
import { toolCallMachine } from '../../machines/index.js';
import type {
  AdmitOutput, ApprovalOutput, ArgumentsOutput, BeginEffectOutput, ExecuteOutput, GuardOutput, Json, ProjectOutput, ToolCallContext,
} from '../../machines/index.js';
import { receiptHasOutcome, receiptKey } from '../agent/envelope.js';
import { toJson } from '../agent/json.js';
import { check, isStandardSchema } from '../agent/schema.js';
import type { AgentToolReceipt, JsonValue, ToolExecuteContext } from '../agent/types.js';
import { messagesOf, type HostState } from './host-state.js';
import { plantedBugs } from './test-switches.js';
import { capForModel, storableResult, unstorableMessage } from './tool-results.js';

const keyOf = (c: ToolCallContext) => receiptKey(c.modelStep, c.toolCallId);

function toolContext(host: HostState, c: ToolCallContext, signal: AbortSignal): ToolExecuteContext {
  return {
    toolCallId: c.toolCallId,
    modelStep: c.modelStep,
    messages: messagesOf(host.context()),
    signal,
    context: host.opts.toolContexts[c.toolName],
  };
}

const errorText = (error: { message: string }) => error.message;

/** No user code sees a result of this tool between its raw receipt and its projection: no validation, projection or onToolResult. */
function projectsTrivially(host: HostState, toolName: string): boolean {
  const tool = host.opts.tools[toolName];
  return tool !== undefined && !tool.validateResult && !isStandardSchema(tool.outputSchema) && !tool.toModelOutput
    && !host.opts.raw.onToolResult;
}

/** A user callback's error reaches the model and the checkpoint only as plain, redacted data. */
function redacting<A, R>(body: (args: A) => Promise<R>): (args: A) => Promise<R> {
  return async (args) => {
    try {
      return await body(args);
    } catch (error) {
      throw serializeError(error);
    }
  };
}

export function provideToolCallMachine(host: HostState) {
  const tools = host.opts.tools;
  return toolCallMachine.provide({
    actors: {
      // Stage 2: the onToolCall guardrails block or rewrite.
      guardCall: fromPromise<GuardOutput, ToolCallContext>(redacting(async ({ input: c }) => {
        const guard = host.opts.raw.onToolCall;
        if (!guard) return { kind: 'allow' };
        const decision = await guard({ toolCallId: c.toolCallId, toolName: c.toolName, args: c.args as JsonValue, modelStep: c.modelStep });
        if (!decision || decision.action === 'allow') return { kind: 'allow' };
        if (decision.action === 'block') return { kind: 'block', reason: decision.reason };
        return { kind: 'rewrite', args: toJson<Json>(decision.args) };
      })),

      // Between policy and approval: the arguments against the tool's parameters. Invalid ones are never offered for approval.
      checkArguments: fromPromise<ArgumentsOutput, ToolCallContext>(redacting(async ({ input: c }) => {
        const parameters = host.opts.parameters[c.toolName];
        if (!parameters) return { kind: 'valid' };
        const verdict = await parameters.check(c.args);
        return verdict.ok ? { kind: 'valid' } : { kind: 'invalid', message: verdict.message };
      })),

      // Stage 3: a recorded outcome skips the gate. A verdict the run asked for decides, even when a
      // predicate would now answer otherwise: a denial is final, an approval stands. Otherwise needsApproval.
      decideApproval: fromPromise<ApprovalOutput, ToolCallContext>(redacting(async ({ input: c, signal }) => {
        if (receiptHasOutcome(host.receipts[keyOf(c)])) return { kind: 'receipt' };
        if (c.verdict !== null) {
          return c.verdict.approved ? { kind: 'approved' } : { kind: 'denied', reason: c.verdict.reason ?? 'Not approved.' };
        }
        const tool = tools[c.toolName]!;
        const gate = tool.needsApproval;
        const needed = typeof gate === 'function' ? await gate(c.args, toolContext(host, c, signal)) : Boolean(gate);
        return needed ? { kind: 'wait' } : { kind: 'not-needed' };
      })),

      // Stage 4: cancellation and the deadline, right before the effect.
      admit: fromPromise<AdmitOutput, ToolCallContext>(async () => {
        if (host.deadlinePassed()) return { kind: 'refused', reason: 'deadline' };
        if (host.signal.aborted) return { kind: 'refused', reason: 'aborted' };
        return { kind: 'admitted' };
      }),

      // Stage 5: effect identity. The receipt decides; a fresh `executing` write issues the permit.
      beginEffect: fromPromise<BeginEffectOutput, ToolCallContext>(async ({ input: c }) => {
        const key = keyOf(c);
        const tool = tools[c.toolName]!;
        const existing = host.receipts[key];
        if (existing && existing.status === 'failed') {
          const message = existing.error ? errorText(existing.error) : 'Tool call failed.';
          return { kind: 'replay-failed', message: capForModel(message, host.opts.maxToolResultChars) as string };
        }
        if (receiptHasOutcome(existing)) return { kind: 'replay' };
        if (typeof tool.execute !== 'function') {
          return c.clientResult ? { kind: 'client-result' } : { kind: 'await-client' };
        }
        const idempotent = tool.replay === 'idempotent';
        // An interrupted call runs again only when idempotent or when this resume asked for it, once.
        if (existing && existing.status === 'executing' && !existing.idempotent && !host.retryKeys.delete(key)) {
          return { kind: 'unknown' };
        }
        if (!plantedBugs.skipExecutingReceipt) {
          host.receipts[key] = {
            key, toolCallId: c.toolCallId, toolName: c.toolName, modelStep: c.modelStep, status: 'executing', idempotent,
          };
          await host.save();
        }
        host.permits.add(key);
        return { kind: 'permit' };
      }),

      // Stage 6: the effect. Without a permit this is a restart after a restore: never run, re-decide.
      executeTool: fromPromise<ExecuteOutput, ToolCallContext>(async ({ input: c, signal }) => {
        const key = keyOf(c);
        const tool = tools[c.toolName]!;
        if (!host.permits.delete(key) && !plantedBugs.ignoreEffectPermit) {
          if (receiptHasOutcome(host.receipts[key])) return { kind: 'replay' };
          // Only a tool marked idempotent may run again under the same identity.
          if (tool.replay !== 'idempotent') return { kind: 'unknown' };
        }
        const combined = host.effectSignal(signal);
        let value: unknown;
        try {
          value = await tool.execute!(c.args, toolContext(host, c, combined));
        } catch (error) {
          host.rawOutcomes.set(key, { kind: 'threw', error: serializeError(error) });
          return { kind: 'threw' };
        }
        // The tool returned: whatever its result is, its effect happened. One that cannot be stored is recorded as such.
        host.rawOutcomes.set(key, storableResult(value, host.opts.maxReceiptBytes, c.toolCallId));
        return { kind: 'result' };
      }),

      // Stage 7a: the raw result (or the error, or the client's answer) is committed first.
      recordResult: fromPromise<void, ToolCallContext>(async ({ input: c }) => {
        const key = keyOf(c);
        const tool = tools[c.toolName]!;
        const base = {
          key, toolCallId: c.toolCallId, toolName: c.toolName, modelStep: c.modelStep, idempotent: tool.replay === 'idempotent',
        };
        let receipt: AgentToolReceipt;
        if (typeof tool.execute !== 'function') {
          const answer = c.clientResult!;
          receipt = { ...base, status: 'executed', rawResult: answer.output as JsonValue, isError: answer.isError, client: true };
        } else {
          const raw = host.rawOutcomes.get(key);
          if (!raw) {
            if (receiptHasOutcome(host.receipts[key])) return;
            throw Object.assign(new Error('The result of this call was lost before its receipt was written.'), { code: 'unknown_effect' });
          }
          receipt = raw.kind === 'result'
            ? { ...base, status: 'executed', rawResult: raw.value }
            : raw.kind === 'unstorable'
              ? { ...base, status: 'unstorable', error: raw.error }
              : { ...base, status: 'failed', error: raw.error };
          if (raw.kind === 'unstorable') {
            host.emit({
              type: 'warning', setting: raw.error.code === 'result_too_large' ? 'maxReceiptBytes' : 'tools', toolCallId: c.toolCallId,
              message: `Tool "${c.toolName}" (call ${c.toolCallId}) ran, but its result could not be stored: ${raw.error.message}. ` +
                'Its receipt records that it ran (status unstorable), and the model was told not to call it again.',
            });
          }
        }
        host.receipts[key] = receipt;
        // Committed before any validation, projection or onToolResult runs. With
        // none of them (or for an error or an unstorable result, which none sees)
        // nothing runs between here and the call's checkpoint, which commits the
        // receipt instead.
        if (receipt.status === 'failed' || receipt.status === 'unstorable' || !projectsTrivially(host, c.toolName)) await host.save();
        host.rawOutcomes.delete(key);
      }),

      // Stage 7b: validation, the tool's projection, then onToolResult (which changes only the model's copy).
      projectResult: fromPromise<ProjectOutput, ToolCallContext>(async ({ input: c }) => {
        const key = keyOf(c);
        const receipt = host.receipts[key]!;
        const tool = tools[c.toolName]!;
        // What enters the model's history is capped (maxToolResultChars); the receipt keeps the whole raw result.
        const end = (outcome: ProjectOutput['outcome'], modelOutput: JsonValue | string, isError: boolean): ProjectOutput =>
          ({ outcome, modelOutput: capForModel(modelOutput, host.opts.maxToolResultChars) as Json, isError });
        if (receipt.status === 'failed') return end('failed', receipt.error?.message ?? 'Tool call failed.', true);
        // The tool ran; there is no result to validate, project or show to onToolResult.
        // (Its message is the engine's own, and short: never cut, so the model always reads "do not call it again".)
        if (receipt.status === 'unstorable') return { outcome: 'unstorable-result', modelOutput: unstorableMessage(receipt.error), isError: false };
        host.emit({ type: 'tool-output', step: c.modelStep, toolCallId: c.toolCallId, toolName: c.toolName, rawResult: receipt.rawResult });
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
            host.receipts[key] = { ...receipt, status: 'validation-failed', modelOutput: projection };
          } else {
            try {
              projection = toJson<JsonValue>(tool.toModelOutput && !isError ? await tool.toModelOutput(checked.value) : checked.value);
              outcome = receipt.client ? 'client-result' : 'completed';
              host.receipts[key] = { ...receipt, status: 'completed', modelOutput: projection };
            } catch (error) {
              projection = `Tool result could not be projected: ${serializeError(error).message}`;
              outcome = 'projection-failure';
              isError = true;
              host.receipts[key] = { ...receipt, status: 'projection-failed', modelOutput: projection };
            }
          }
        }
        const guard = host.opts.raw.onToolResult;
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
      checkpoint: fromPromise<void, ToolCallContext>(async () => {
        if (host.context().batch.length > 1) await host.save();
      }),
    },
  });
}

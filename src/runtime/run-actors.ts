/**
 * The run machine's actors that are not saves: the model call, the output
 * check and the verifier.
 */
import { ExecutionPolicyError, ModelCallError, serializeError } from '../errors/index.js';
import type {
  ErrorData, Json, ModelCallInput, ModelCallOutput, OutputCheck, PolicyOutput, Turn, ValidateInput, VerifierOutput, VerifyInput,
} from '../../machines/index.js';
import type { LanguageModel, ModelCallWarning, ModelRequest, ModelResponse, ModelToolSpec } from '../models/types.js';
import { toJson } from '../agent/json.js';
import { check, parseJsonAnswer, wireSchema } from '../agent/schema.js';
import type { JsonValue, Message, VerifyVerdict } from '../agent/types.js';
import { transientCause } from '../models/transient.js';
import { deadlinePassed, effectSignal, legActor, type Leg } from './host-state.js';
import { callModel, StreamBrokeOff } from './model-call.js';
import { BudgetRefusal } from './budget.js';
import { modelKey } from '../models/resolve.js';
import { memoryIntentLogic } from '../memory/run-actors.js';
import { writeChatActor } from '../chat/projection-actor.js';
import { v3LegOf } from '../v3/run-leg.js';
import { enterHandoff } from '../delegation/handoff-actor.js';
import { withInstructions } from '../delegation/handoff.js';

const deadlineError = () => serializeError(new ExecutionPolicyError('deadline_exceeded', 'The execution deadline elapsed.'));

/** A tool's spec as last built, with what it was built from: built again only when one of them changed. */
interface BuiltSpec { name: string; description: string | undefined; source: unknown; spec: ModelToolSpec }
const builtSpecs = new WeakMap<object, BuiltSpec>();

/**
 * The tools on the wire, in the run's order. Each tool's spec is built once (its schema copied to plain JSON) and
 * reused for every step while the tool, its name, its description and its schema are the ones it was built from (a
 * handoff or an MCP catalog refresh brings other tools, and with them other specs).
 */
function toolSpecs(host: Leg, names?: string[]): ModelToolSpec[] {
  const out: ModelToolSpec[] = [];
  const { tools, parameters } = host.opts;
  for (const name in tools) {
    if (!Object.hasOwn(tools, name) || (names && !names.includes(name))) continue;
    const tool = tools[name]!;
    // The checked JSON Schema: a Standard Schema value goes out as the JSON Schema it converts to, never as itself.
    const source = parameters[name]?.wire ?? tool.parameters;
    let built = builtSpecs.get(tool);
    if (!built || built.name !== name || built.description !== tool.description || built.source !== source) {
      const spec = { name, ...(tool.description !== undefined ? { description: tool.description } : {}), parameters: toJson<JsonValue>(source) };
      builtSpecs.set(tool, (built = { name, description: tool.description, source, spec }));
    }
    out.push(built.spec);
  }
  return out;
}

/** The request for one step: the loop's, or finalization's (one more turn of the same conversation). */
async function buildRequest(host: Leg, step: number, phase: 'loop' | 'finalize', signal: AbortSignal, model: LanguageModel): Promise<ModelRequest> {
  const { opts } = host;
  // After a handoff the target's instructions take the place of the run's own.
  const history = withInstructions(opts, host.transcript()) as Message[];
  // A V3 leg asked prepareStep already when it compiled the step's context at the save before this call.
  const v3 = v3LegOf(opts.raw);
  const prepared = (v3 ? await v3.prepareResult(step, phase, history) : await opts.raw.prepareStep?.({ stepNumber: step, messages: history, phase })) ?? {};
  let messages: Message[] = prepared.messages ?? history;
  if (prepared.system !== undefined) {
    messages = [{ role: 'system', content: prepared.system }, ...messages.filter((m) => m.role !== 'system')];
  }
  if (v3) messages = await v3.request(step, phase, messages, model, () => host.save(), (warning) => host.emit(warning));
  const output = opts.raw.output;
  const settings = {
    ...(opts.settings ? { settings: { ...opts.settings } } : {}),
    ...(opts.providerOptions ? { providerOptions: structuredClone(opts.providerOptions) } : {}),
  };
  if (phase === 'loop') {
    return { messages, tools: toolSpecs(host, prepared.activeTools), toolChoice: prepared.toolChoice ?? opts.toolChoice, ...settings, signal };
  }
  if (opts.outputMode === 'tool') {
    return {
      messages,
      tools: [{ name: opts.outputToolName, description: 'Give the final answer.', parameters: toJson<JsonValue>(wireSchema(output!.schema)) }],
      toolChoice: { toolName: opts.outputToolName },
      ...settings,
      signal,
    };
  }
  // json strategy: the loop's tools stay on the wire (the prefix stays the loop's) but cannot be called.
  return {
    messages,
    tools: toolSpecs(host, prepared.activeTools),
    toolChoice: 'none',
    responseFormat: { type: 'json', schema: toJson<JsonValue>(wireSchema(output!.schema)) },
    ...settings,
    signal,
  };
}

/**
 * Effect identity is [modelStep, toolCallId], so ids must differ within a turn.
 * A provider that repeats one gets the repeats renamed (`id#2`), in the turn as
 * recorded, so the model's calls and their answers still pair up.
 */
function uniqueIds(calls: ModelResponse['toolCalls']): ModelResponse['toolCalls'] {
  const seen = new Map<string, number>();
  return calls.map((call) => {
    const count = (seen.get(call.toolCallId) ?? 0) + 1;
    seen.set(call.toolCallId, count);
    return count === 1 ? call : { ...call, toolCallId: `${call.toolCallId}#${count}` };
  });
}

/** A model's warning as a run warning: `setting` names what the model left out. */
function warningOf(warning: ModelCallWarning) {
  return warning.type === 'unsupported-setting'
    ? { type: 'warning' as const, setting: warning.setting, message: `The model does not take ${warning.setting}; it was left out of the request${warning.details ? `: ${warning.details}` : '.'}` }
    : { type: 'warning' as const, setting: 'model', message: String((warning as { message?: unknown }).message ?? 'The model warned.') };
}

/**
 * The first call of a batch the execution policy forbids, as the run's error
 * (ExecutionPolicyError `tool_not_allowed`, naming the call), or null. A tool
 * the run does not offer is left to its call, which answers it as not available.
 */
export function batchViolation(host: Leg, calls: readonly { toolCallId: string; toolName: string }[]): ErrorData | null {
  const execution = host.opts.execution;
  if (!execution) return null;
  for (const call of calls) {
    if (!(call.toolName in host.opts.tools) || execution.allowsTool(call.toolName)) continue;
    return {
      ...serializeError(new ExecutionPolicyError(
        'tool_not_allowed', `The execution policy does not allow the tool ${call.toolName} (call ${call.toolCallId}).`, call.toolCallId,
      )),
    };
  }
  return null;
}

/** The run machine's actors, provided once per process. */
export const runActors = {
  saveCheckpoint: legActor<void, { at: string }>((host) => host.save()),
  // The extraction of a completed run's memory (machines/memory-intent.ts).
  memoryIntent: memoryIntentLogic,
  // The chat projection's write, after the checkpoint (src/chat/projection.ts).
  writeChat: writeChatActor,
  // A handoff puts the target's model, instructions and tools in place (src/delegation/handoff.ts).
  enterHandoff,
  callModel: legActor<ModelCallOutput, ModelCallInput>(async (host, { input, signal }) => {
    const { step, phase } = input;
    const deadlineAt = input.deadlineAt ?? null;
    if (deadlinePassed(host, deadlineAt)) return { kind: 'deadline', error: deadlineError() };
    if (host.signal.aborted) return { kind: 'aborted' };
    // A step boundary: a tool catalog an MCP server announced since the last step takes its place now (docs/mcp.md).
    const toolNames = host.opts.mcpLive ? await host.opts.mcpLive.atStepBoundary() : null;
    const combined = effectSignal(host, signal, deadlineAt);
    host.emit({ type: 'step-start', step, phase });
    const span = host.tracer?.modelCall(step, phase);
    let response: ModelResponse;
    let answered: string;
    let models: Json | undefined;
    let contextMessages: Message[] | undefined;
    try {
      const call = await callModel(host, input, combined, (model, signal) => buildRequest(host, step, phase, signal, model));
      response = call.response;
      contextMessages = v3LegOf(host.opts.raw)?.afterCall(step, phase, call.model, response.usage);
      answered = modelKey(call.model);
      models = call.models as unknown as Json | undefined;
    } catch (error) {
      span?.failed(error);
      if (deadlinePassed(host, deadlineAt)) return { kind: 'deadline', error: deadlineError() };
      if (host.signal.aborted) return { kind: 'aborted' };
      // The ledger refused the attempt: the run stops and says what was spent, held and asked for.
      if (error instanceof BudgetRefusal) return { kind: 'budget', details: toJson<Json>(error.details) };
      const broke = error instanceof StreamBrokeOff;
      const original = broke ? error.original : error;
      const cause = transientCause(original, broke);
      // Plain, redacted data: it goes into the snapshot.
      throw { ...serializeError(original, 'model_call_failed'), ...(cause ? { retry: { cause, phase } } : {}) };
    }
    span?.answered(answered, response);
    if (response.finishReason === 'error') {
      throw serializeError(new ModelCallError('The model ended its turn with an error.'));
    }
    if (phase === 'finalize' && host.opts.outputMode === 'tool') {
      // The forced output call is the draft of the answer: streams show it like a call.
      for (const call of response.toolCalls.filter((c) => c.toolName === host.opts.outputToolName)) {
        host.emit({ type: 'tool-call-start', step, toolCallId: call.toolCallId, toolName: call.toolName, args: toJson<JsonValue>(call.args) });
      }
    }
    for (const warning of response.warnings ?? []) host.emit(warningOf(warning));
    const turn: Turn = {
      step,
      phase,
      text: response.text,
      toolCalls: uniqueIds(response.toolCalls).map((c) => ({
        toolCallId: c.toolCallId,
        toolName: c.toolName,
        args: toJson<Json>(c.args),
        ...(c.providerMetadata ? { providerMetadata: toJson<{ [provider: string]: Json }>(c.providerMetadata) } : {}),
      })),
      finishReason: response.finishReason,
      usage: { ...response.usage },
      model: answered,
      ...(response.reasoning && response.reasoning.length > 0 ? { reasoning: toJson<Json[]>(response.reasoning) } : {}),
      ...(response.providerMetadata ? { providerMetadata: toJson<{ [provider: string]: Json }>(response.providerMetadata) } : {}),
      ...(response.response ? { response: toJson<{ id?: string; modelId?: string }>(response.response) } : {}),
    };
    host.emit({ type: 'step-finish', step, finishReason: response.finishReason, usage: response.usage });
    return {
      kind: 'turn', turn, ...(models !== undefined ? { models } : {}), ...(toolNames ? { toolNames } : {}),
      ...(contextMessages && contextMessages.length > 0 ? { contextMessages: toJson<Json[]>(contextMessages) } : {}),
    };
  }),

  // The execution policy decides for the whole batch of the last turn, before any guardrail, approval or sibling.
  checkBatchPolicy: legActor<PolicyOutput, { step: number }>(async (host) => {
    const turn = [...host.transcript()].reverse().find((m) => m.role === 'assistant');
    const calls = turn?.role === 'assistant' ? turn.toolCalls ?? [] : [];
    const error = batchViolation(host, calls);
    return error ? { kind: 'violation', error } : { kind: 'ok' };
  }),

  validateOutput: legActor<OutputCheck, ValidateInput>(async (host, { input }) => {
    const { opts } = host;
    const turn = input.turn;
    const output = opts.raw.output!;
    let parsed: { ok: true; value: unknown } | { ok: false; issue: string };
    if (opts.outputMode === 'tool') {
      const call = turn.toolCalls.find((c) => c.toolName === opts.outputToolName);
      parsed = call ? { ok: true, value: call.args } : { ok: false, issue: `The answer did not call ${opts.outputToolName}.` };
    } else {
      parsed = parseJsonAnswer(turn.text);
    }
    const checked = parsed.ok ? await check(parsed.value, output.schema, output.validate as (v: unknown) => unknown) : parsed;
    host.emit({ type: 'output-attempt', attempt: input.attempt, valid: checked.ok, ...(checked.ok ? {} : { issue: checked.issue }) });
    return checked.ok ? { kind: 'valid', output: toJson<Json>(checked.value) } : { kind: 'invalid', issue: checked.issue };
  }),

  // The attempt count is durable before the verifier runs; that write issues the verifier's permit.
  beginVerify: legActor<void, { attempt: number }>(async (host, { input }) => {
    await host.save();
    host.permits.grant(`verify:${input.attempt}`);
  }),

  runVerifier: legActor<VerifierOutput, VerifyInput>(async (host, { input, signal }) => {
    if (!host.permits.take(`verify:${input.attempt}`)) return { kind: 'restarted' };
    const verify = host.opts.raw.verify!;
    const { candidate, deadlineAt } = input;
    let verdict: VerifyVerdict | undefined;
    let thrown: unknown;
    try {
      verdict = await verify({
        output: candidate.output as never,
        text: candidate.text,
        attempt: input.attempt,
        runId: host.runId,
        signal: effectSignal(host, signal, deadlineAt),
        execution: host.execution,
      });
    } catch (error) {
      thrown = error;
    }
    // Cancellation and the deadline outrank whatever the verifier said.
    if (deadlinePassed(host, deadlineAt)) return { kind: 'deadline', error: deadlineError() };
    if (host.signal.aborted) return { kind: 'aborted' };
    let out: VerifierOutput;
    if (thrown !== undefined) {
      out = { kind: 'inconclusive', reason: `The verifier threw: ${serializeError(thrown).message}` };
    } else if (verdict?.status === 'verified') {
      out = { kind: 'verified' };
    } else if (verdict?.status === 'rejected') {
      out = { kind: 'rejected', feedback: String(verdict.feedback ?? '') };
    } else if (verdict?.status === 'inconclusive') {
      out = { kind: 'inconclusive', reason: verdict.reason ?? '' };
    } else {
      out = { kind: 'inconclusive', reason: 'The verifier returned no verdict.' };
    }
    host.emit({ type: 'verify-result', attempt: input.attempt, verdict: out.kind as VerifyVerdict['status'] });
    return out;
  }),
};

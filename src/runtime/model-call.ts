/**
 * One model call of a run, as the run machine's `callModel` actor makes it:
 * the candidates ([the model the run calls now, ...the fallbacks after it],
 * less the ones that failed over before), each behind the circuit breaker,
 * each tried up to `maxRetries` more times, each attempt bounded by the
 * transport timeout. A failure that is transient and came before the call's
 * first content fails over to the next candidate; anything else ends the call.
 */
import { BreakerOpenError, ExecutionPolicyError, ModelCallError, serializeError, type SerializedError } from '../errors/index.js';
import type { JsonValue } from '../agent/json.js';
import type { AgentRunModels, ModelRef } from '../agent/types.js';
import { Breaker } from '../models/breaker.js';
import { modelKey } from '../models/resolve.js';
import { isFailoverCause, isRetryableCause, retryDelay, sleep } from '../models/retry.js';
import { transientCause, type TransientCause } from '../models/transient.js';
import type {
  FinishReason, LanguageModel, ModelCallWarning, ModelRequest, ModelResponse, ModelToolCall, ReasoningPart, Usage,
} from '../models/types.js';
import type { ModelCallInput } from '../../machines/index.js';
import { deadlinePassed, type Leg } from './host-state.js';
import { timeoutSignal } from './timeout-signal.js';

/** Thrown when the call failed after its first content: never retried, never failed over. */
export class StreamBrokeOff extends Error {
  constructor(readonly original: unknown) {
    super('The model stream broke off.');
  }
}

export interface CallResult {
  response: ModelResponse;
  model: LanguageModel;
  /** The fail-over record after this call, when it failed over; undefined when it did not. */
  models: AgentRunModels | undefined;
}

const FINISH_REASONS: ReadonlySet<string> = new Set<FinishReason>(['stop', 'tool-calls', 'length', 'content-filter', 'refusal', 'error', 'other']);

export const refOf = (model: LanguageModel): ModelRef => ({
  provider: model.provider,
  modelId: model.modelId,
  ...(typeof model.protocol === 'string' ? { protocol: model.protocol } : {}),
});

/** The record a run starts with: the primary model selected, no fail-over yet. */
export function initialModels(primary: LanguageModel): AgentRunModels {
  return { policy: 1, selected: refOf(primary), failovers: [] };
}

function invalid(message: string): Error {
  return new ModelCallError(`The model answered with ${message}.`, { code: 'invalid_response' });
}

function usageOf(value: unknown): Usage {
  const u = (value ?? {}) as Record<string, unknown>;
  const count = (key: string) => (typeof u[key] === 'number' && Number.isFinite(u[key]) ? (u[key] as number) : undefined);
  const inputTokens = count('inputTokens') ?? 0;
  const outputTokens = count('outputTokens') ?? 0;
  const out: Usage = { inputTokens, outputTokens, totalTokens: count('totalTokens') ?? inputTokens + outputTokens };
  for (const key of ['cacheReadTokens', 'cacheWriteTokens', 'reasoningTokens'] as const) {
    const n = count(key);
    if (n !== undefined) out[key] = n;
  }
  return out;
}

function toolCallOf(value: unknown): ModelToolCall {
  const c = value as Record<string, unknown> | null;
  if (!c || typeof c !== 'object' || typeof c.toolCallId !== 'string' || typeof c.toolName !== 'string') {
    throw invalid('a tool call without a string toolCallId and toolName');
  }
  return {
    toolCallId: c.toolCallId,
    toolName: c.toolName,
    args: (c.args ?? {}) as JsonValue,
    ...(c.providerMetadata && typeof c.providerMetadata === 'object' ? { providerMetadata: c.providerMetadata as ModelToolCall['providerMetadata'] } : {}),
  };
}

/** Checks what a model returned from doGenerate: a model that breaks the spec fails the call, not the process. */
export function checkResponse(value: unknown): ModelResponse {
  if (!value || typeof value !== 'object') throw invalid(`${value === null ? 'null' : typeof value} instead of a response`);
  const r = value as Record<string, unknown>;
  if (r.text !== undefined && typeof r.text !== 'string') throw invalid('a text that is not a string');
  if (r.toolCalls !== undefined && !Array.isArray(r.toolCalls)) throw invalid('toolCalls that are not an array');
  const toolCalls = ((r.toolCalls as unknown[] | undefined) ?? []).map(toolCallOf);
  const finish = typeof r.finishReason === 'string' && FINISH_REASONS.has(r.finishReason) ? (r.finishReason as FinishReason) : null;
  return {
    text: (r.text as string | undefined) ?? '',
    toolCalls,
    finishReason: finish ?? (toolCalls.length > 0 ? 'tool-calls' : 'other'),
    usage: usageOf(r.usage),
    ...(Array.isArray(r.reasoning) ? { reasoning: r.reasoning as ReasoningPart[] } : {}),
    ...(r.response && typeof r.response === 'object' ? { response: r.response as ModelResponse['response'] } : {}),
    ...(Array.isArray(r.warnings) ? { warnings: r.warnings as ModelCallWarning[] } : {}),
    ...(r.providerMetadata && typeof r.providerMetadata === 'object' ? { providerMetadata: r.providerMetadata as ModelResponse['providerMetadata'] } : {}),
  };
}

/** One attempt on one model: generate, or stream with the text shown as it comes. */
async function attempt(host: Leg, model: LanguageModel, request: ModelRequest, step: number): Promise<ModelResponse> {
  if (typeof model.doStream !== 'function') {
    const response = checkResponse(await model.doGenerate(request));
    if (response.text) host.emit({ type: 'text-delta', step, delta: response.text });
    return response;
  }
  let text = '';
  const toolCalls: ModelToolCall[] = [];
  const reasoning: ReasoningPart[] = [];
  const warnings: ModelCallWarning[] = [];
  // Calls whose arguments came in pieces: kept until the finished call arrives (or assembled at the end).
  const partial = new Map<string, { toolName: string; args: string }>();
  let reasoningText = '';
  let meta: ModelResponse['response'] | undefined;
  let finish: Pick<ModelResponse, 'finishReason' | 'usage' | 'providerMetadata'> | null = null;
  let began = false;
  try {
    const stream = model.doStream(request);
    if (!stream || typeof (stream as AsyncIterable<unknown>)[Symbol.asyncIterator] !== 'function') throw invalid('a stream that is not async-iterable');
    for await (const part of stream) {
      if (!part || typeof part !== 'object') throw invalid('a stream part that is not an object');
      switch (part.type) {
        case 'response-metadata':
          meta = { ...(part.id !== undefined ? { id: part.id } : {}), ...(part.modelId !== undefined ? { modelId: part.modelId } : {}) };
          break;
        case 'text-delta':
          began = true;
          text += part.delta;
          host.emit({ type: 'text-delta', step, delta: part.delta });
          break;
        case 'reasoning-delta':
          began = true;
          reasoningText += part.delta;
          host.emit({ type: 'reasoning-delta', step, delta: part.delta });
          break;
        case 'reasoning':
          began = true;
          reasoning.push(part.reasoning);
          reasoningText = '';
          break;
        case 'tool-call-start':
          began = true;
          partial.set(part.toolCallId, { toolName: part.toolName, args: '' });
          break;
        case 'tool-call-delta': {
          began = true;
          const open = partial.get(part.toolCallId);
          if (open) open.args += part.argsTextDelta;
          break;
        }
        case 'tool-call':
          began = true;
          partial.delete(part.toolCall.toolCallId);
          toolCalls.push(toolCallOf(part.toolCall));
          break;
        case 'warnings':
          warnings.push(...part.warnings);
          break;
        case 'finish':
          finish = { finishReason: part.finishReason, usage: usageOf(part.usage), ...(part.providerMetadata ? { providerMetadata: part.providerMetadata } : {}) };
          break;
        case 'error':
          throw part.error;
        default:
          break;
      }
    }
  } catch (error) {
    throw began ? new StreamBrokeOff(error) : error;
  }
  if (!finish) {
    const error = new ModelCallError('The model stream ended without a finish part.');
    throw began ? new StreamBrokeOff(error) : error;
  }
  for (const [toolCallId, open] of partial) {
    let args: JsonValue = open.args;
    try {
      args = open.args.trim() === '' ? {} : (JSON.parse(open.args) as JsonValue);
    } catch {
      // Arguments that are not JSON stay text: the call is answered as invalid, the run goes on.
    }
    toolCalls.push({ toolCallId, toolName: open.toolName, args });
  }
  // Reasoning streamed as deltas with no finished part: kept as text, with no provider data to send back.
  if (reasoningText !== '' && reasoning.length === 0) reasoning.push({ type: 'reasoning', text: reasoningText });
  const finishReason = FINISH_REASONS.has(finish.finishReason) ? finish.finishReason : 'other';
  return {
    text,
    toolCalls,
    finishReason,
    usage: finish.usage,
    ...(reasoning.length > 0 ? { reasoning } : {}),
    ...(meta ? { response: meta } : {}),
    ...(warnings.length > 0 ? { warnings } : {}),
    ...(finish.providerMetadata ? { providerMetadata: finish.providerMetadata } : {}),
  };
}

/** The error as the run records it, with its transient cause. */
function describe(error: unknown, cause: TransientCause | null): SerializedError & { cause?: string } {
  return { ...serializeError(error, 'model_call_failed'), ...(cause ? { cause } : {}) };
}

/** The models a call tries, in order: the chain less the ones that failed over before. */
export function candidatesOf(chain: readonly LanguageModel[], models: AgentRunModels | null): LanguageModel[] {
  const skipped = new Set((models?.failovers ?? []).map((f) => modelKey(f.failed)));
  const candidates = chain.filter((m) => !skipped.has(modelKey(m)));
  // Every model failed over once already: the call starts again from the last one.
  if (candidates.length === 0) candidates.push(chain[chain.length - 1]!);
  return candidates;
}

/**
 * Makes the call. `build` gives the request for a candidate (each candidate
 * gets its own, so a request profile or object strategy can differ).
 * Rejects with the last error when every candidate failed, with a
 * {@link StreamBrokeOff} when the call failed after its first content, and
 * with the signal's reason on an abort or the deadline.
 */
export async function callModel(
  host: Leg,
  input: ModelCallInput,
  signal: AbortSignal,
  build: (model: LanguageModel, signal: AbortSignal) => Promise<ModelRequest>,
): Promise<CallResult> {
  const { opts } = host;
  const { step, phase } = input;
  const chain = opts.models;
  const before = (input.models ?? null) as AgentRunModels | null;
  const candidates = candidatesOf(chain, before);
  const breaker = opts.raw.deps?.breakerStore ? new Breaker(opts.raw.deps.breakerStore, opts.raw.deps.breaker, opts.now) : null;
  const wait = opts.raw.deps?.sleep ?? sleep;
  let models = before;
  let lastError: unknown;
  for (let index = 0; index < candidates.length; index++) {
    const model = candidates[index]!;
    const key = modelKey(model);
    let cause: TransientCause | null = null;
    for (let retry = 0; ; retry++) {
      if (signal.aborted) throw signal.reason;
      // The deadline outranks every retry and fail-over: the caller reports it.
      if (deadlinePassed(host, input.deadlineAt ?? null)) throw lastError ?? new ExecutionPolicyError('deadline_exceeded', 'The execution deadline elapsed.');
      let state = null;
      // The reservation of this attempt, once the ledger admitted it.
      let hold: string | null = null;
      try {
        // A model outside the allowlist is refused before its call (a fallback's included); it never fails over.
        if (opts.execution && !opts.execution.allowsModel(model)) {
          throw new ExecutionPolicyError('model_not_allowed', `The execution policy does not allow the model ${key}.`);
        }
        // An open breaker refuses before anything is reserved.
        if (breaker) state = await breaker.admit(key);
        const timeout = opts.modelTimeoutMs === undefined ? undefined : timeoutSignal(opts.modelTimeoutMs);
        const attemptSignal = timeout ? AbortSignal.any([signal, timeout.signal]) : signal;
        let response: ModelResponse;
        try {
          const request = await build(model, attemptSignal);
          if (host.budget) hold = await host.budget.admit(model, request, step, opts.settings?.maxOutputTokens);
          response = await attempt(host, model, request, step);
        } finally {
          timeout?.clear();
        }
        if (hold !== null) await host.budget!.settle(hold, model, response.usage);
        if (breaker) await breaker.succeeded(key, state).catch(() => undefined);
        return { response, model, models: models === before ? undefined : models ?? undefined };
      } catch (error) {
        // A failed attempt keeps its hold when the provider may have billed it (5xx, 529, network, timeout, a broken stream).
        if (hold !== null) await host.budget!.fail(hold, error instanceof StreamBrokeOff ? null : error);
        if (signal.aborted) throw signal.reason ?? error;
        if (error instanceof StreamBrokeOff) {
          if (breaker) await breaker.failed(key).catch(() => undefined);
          throw error;
        }
        lastError = error;
        cause = transientCause(error, false);
        if (breaker && cause !== null && !(error instanceof BreakerOpenError)) await breaker.failed(key).catch(() => undefined);
        if (!isRetryableCause(cause) || retry >= opts.maxRetries) break;
        const delay = retryDelay(retry + 1, (error as { retryAfterMs?: number }).retryAfterMs);
        if (delay === null) break;
        await wait(delay, signal);
      }
    }
    const next = candidates[index + 1];
    if (!next || !isFailoverCause(cause)) break;
    const error = describe(lastError, cause);
    const failover = {
      attempt: index + 1,
      failed: refOf(model),
      next: refOf(next),
      modelStep: step,
      phase,
      error,
    };
    const base = models ?? initialModels(chain[0]!);
    models = { policy: 1, selected: refOf(next), failovers: [...base.failovers, failover] };
    host.emit({
      type: 'warning',
      setting: 'fallbackModels',
      message: `${key} failed (${error.message}); the call fails over to ${modelKey(next)}.`,
    });
  }
  throw lastError;
}

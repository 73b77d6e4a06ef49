/**
 * A Chat Completions answer, whole or streamed, as the model spec's response
 * and stream parts. Compatible servers that report the model's thinking in
 * `reasoning_content` or `reasoning` get it back as reasoning parts without
 * provider metadata: the wire has no way to take them back.
 */
import { eventJson, parseToolArgs } from '../utils/json.js';
import { invalidResponse } from '../utils/http.js';
import type {
  FinishReason, ModelCallWarning, ModelResponse, ModelStreamPart, ModelToolCall, ReasoningPart, Usage,
} from '../../models/types.js';
import type { SseEvent } from '../utils/sse.js';
import { arr, num, obj, str, streamEndedEarly, answerError, usageOf, type Wire } from './common.js';

/** A call without an id (some local servers send none) gets one from its position in the turn. */
const callId = (id: unknown, index: number) => str(id) || `call_${index}`;

export function chatUsage(usage: unknown): Usage {
  const u = obj(usage);
  return usageOf(num(u?.prompt_tokens) ?? 0, num(u?.completion_tokens) ?? 0, num(u?.total_tokens), {
    cacheRead: num(obj(u?.prompt_tokens_details)?.cached_tokens),
    reasoning: num(obj(u?.completion_tokens_details)?.reasoning_tokens),
  });
}

/**
 * `stop` with calls in the turn is `tool-calls`: some compatible servers
 * (older Ollama) say `stop` after calling tools, and the run dispatches the
 * calls of a `tool-calls` turn only.
 */
export function chatFinishReason(reason: string | undefined, refused: boolean, hasCalls: boolean): FinishReason {
  if (refused) return 'refusal';
  switch (reason) {
    case 'stop':
      return hasCalls ? 'tool-calls' : 'stop';
    case 'tool_calls':
    case 'function_call':
      return 'tool-calls';
    case 'length':
      return 'length';
    case 'content_filter':
      return 'content-filter';
    case undefined:
      return hasCalls ? 'tool-calls' : 'other';
    default:
      return 'other';
  }
}

const reasoningText = (message: Wire | undefined) => str(message?.reasoning_content) ?? str(message?.reasoning);

export function chatResponse(body: unknown, provider: string, url: string, warnings: ModelCallWarning[]): ModelResponse {
  const b = obj(body);
  const choice = obj(arr(b?.choices)[0]);
  const message = obj(choice?.message);
  if (!b || !message) throw invalidResponse(provider, url, 'a completion without choices', body);
  const refusal = str(message.refusal);
  const toolCalls: ModelToolCall[] = arr(message.tool_calls).map((raw, i) => {
    const call = obj(raw);
    const fn = obj(call?.function);
    return { toolCallId: callId(call?.id, i), toolName: str(fn?.name) ?? '', args: parseToolArgs(str(fn?.arguments) ?? '') };
  });
  const thought = reasoningText(message);
  return {
    text: str(message.content) ?? refusal ?? '',
    toolCalls,
    finishReason: chatFinishReason(str(choice?.finish_reason), refusal !== undefined && refusal !== '', toolCalls.length > 0),
    usage: chatUsage(b.usage),
    ...(thought ? { reasoning: [{ type: 'reasoning', text: thought }] } : {}),
    response: { ...(str(b.id) ? { id: str(b.id) } : {}), ...(str(b.model) ? { modelId: str(b.model) } : {}) },
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}

interface OpenCall {
  id: string;
  name: string;
  args: string;
  done: boolean;
}

/** Turns the events of a streamed completion into stream parts; the stream ends at `[DONE]`. */
export async function* chatStreamParts(
  events: AsyncIterable<SseEvent>, provider: string, url: string, warnings: ModelCallWarning[],
): AsyncGenerator<ModelStreamPart> {
  const calls = new Map<number, OpenCall>();
  let reasoning = '';
  let finish: string | undefined;
  let sawFinish = false;
  let refused = false;
  let usage: Usage | undefined;
  let metadataSent = false;
  let ended = false;

  const closeReasoning = function* (): Generator<ModelStreamPart> {
    if (reasoning === '') return;
    const part: ReasoningPart = { type: 'reasoning', text: reasoning };
    reasoning = '';
    yield { type: 'reasoning', reasoning: part };
  };
  const closeCalls = function* (): Generator<ModelStreamPart> {
    for (const [, call] of [...calls].sort(([a], [b]) => a - b)) {
      if (call.done) continue;
      call.done = true;
      yield { type: 'tool-call', toolCall: { toolCallId: call.id, toolName: call.name, args: parseToolArgs(call.args) } };
    }
  };

  for await (const event of events) {
    if (event.data === '[DONE]') {
      ended = true;
      break;
    }
    // An event with no data is a keep-alive; one that is not a JSON object is a broken answer.
    const chunk: Wire | undefined = eventJson(event.data, provider, url);
    if (!chunk) continue;
    if (chunk.error !== undefined) throw answerError(provider, url, obj(chunk.error) ?? { message: String(chunk.error) });
    if (!metadataSent) {
      metadataSent = true;
      yield { type: 'response-metadata', ...(str(chunk.id) ? { id: str(chunk.id) } : {}), ...(str(chunk.model) ? { modelId: str(chunk.model) } : {}) };
      if (warnings.length > 0) yield { type: 'warnings', warnings };
    }
    if (chunk.usage !== undefined && chunk.usage !== null) usage = chatUsage(chunk.usage);
    const choice = obj(arr(chunk.choices)[0]);
    const delta = obj(choice?.delta);
    const thought = reasoningText(delta);
    if (thought) {
      reasoning += thought;
      yield { type: 'reasoning-delta', delta: thought };
    }
    const content = str(delta?.content) || str(delta?.refusal);
    if (str(delta?.refusal)) refused = true;
    if (content) {
      yield* closeReasoning();
      yield { type: 'text-delta', delta: content };
    }
    for (const raw of arr(delta?.tool_calls)) {
      const piece = obj(raw);
      const index = num(piece?.index) ?? calls.size;
      const fn = obj(piece?.function);
      let call = calls.get(index);
      if (!call) {
        yield* closeReasoning();
        call = { id: callId(piece?.id, index), name: str(fn?.name) ?? '', args: '', done: false };
        calls.set(index, call);
        yield { type: 'tool-call-start', toolCallId: call.id, toolName: call.name };
      }
      const argsDelta = str(fn?.arguments);
      if (argsDelta) {
        call.args += argsDelta;
        yield { type: 'tool-call-delta', toolCallId: call.id, argsTextDelta: argsDelta };
      }
    }
    const reason = str(choice?.finish_reason);
    if (reason) {
      finish = reason;
      sawFinish = true;
      yield* closeReasoning();
      yield* closeCalls();
    }
  }
  // A server that closes the body after the finish reason without `[DONE]` still gave the whole turn.
  if (!ended && !sawFinish) throw streamEndedEarly(provider, url);
  yield* closeReasoning();
  yield* closeCalls();
  yield { type: 'finish', finishReason: chatFinishReason(finish, refused, calls.size > 0), usage: usage ?? usageOf(0, 0, 0, {}) };
}

/**
 * A Responses answer, whole or streamed, as the model spec's response and
 * stream parts. Each reasoning item becomes a reasoning part whose
 * `providerMetadata.openai` holds what the next request must send back: the
 * item's id, its encrypted content and its summary, as the API returned them.
 */
import type { JsonValue } from '../../agent/json.js';
import type {
  FinishReason, ModelCallWarning, ModelResponse, ModelStreamPart, ModelToolCall, ReasoningPart, Usage,
} from '../../models/types.js';
import { invalidResponse } from '../utils/http.js';
import { eventJson, parseToolArgs } from '../utils/json.js';
import type { SseEvent } from '../utils/sse.js';
import {
  answerError, arr, num, obj, str, streamEndedEarly, usageOf, type Wire,
} from '../openai-compatible/common.js';
import { OPENAI } from './responses-request.js';

export function responsesUsage(usage: unknown): Usage {
  const u = obj(usage);
  return usageOf(num(u?.input_tokens) ?? 0, num(u?.output_tokens) ?? 0, num(u?.total_tokens), {
    cacheRead: num(obj(u?.input_tokens_details)?.cached_tokens),
    reasoning: num(obj(u?.output_tokens_details)?.reasoning_tokens),
  });
}

/** The reason of a finished response: `incomplete` says why it stopped; a `completed` one ended on its own. */
export function responsesFinishReason(response: Wire | undefined, refused: boolean, hasCalls: boolean): FinishReason {
  if (str(response?.status) === 'incomplete') {
    const reason = str(obj(response?.incomplete_details)?.reason);
    return reason === 'max_output_tokens' ? 'length' : reason === 'content_filter' ? 'content-filter' : 'other';
  }
  if (refused) return 'refusal';
  return hasCalls ? 'tool-calls' : 'stop';
}

export function reasoningPart(item: Wire): ReasoningPart {
  const summary = arr(item.summary);
  const text = summary.flatMap((s) => (str(obj(s)?.text) !== undefined ? [str(obj(s)?.text)!] : [])).join('\n\n');
  const encrypted = str(item.encrypted_content);
  return {
    type: 'reasoning',
    text,
    providerMetadata: {
      [OPENAI]: { itemId: str(item.id) ?? '', summary: summary as JsonValue[], ...(encrypted !== undefined ? { encryptedContent: encrypted } : {}) },
    },
  };
}

function toolCallOf(item: Wire): ModelToolCall {
  return { toolCallId: str(item.call_id) ?? str(item.id) ?? '', toolName: str(item.name) ?? '', args: parseToolArgs(str(item.arguments) ?? '') };
}

function metadataOf(response: Wire | undefined): { id?: string; modelId?: string } {
  return { ...(str(response?.id) ? { id: str(response?.id) } : {}), ...(str(response?.model) ? { modelId: str(response?.model) } : {}) };
}

/** A response the API marked failed, as the error its `error.code` stands for. */
function failed(response: Wire | undefined, provider: string, url: string) {
  return answerError(provider, url, obj(response?.error) ?? { message: 'The response failed.' });
}

export function responsesResponse(body: unknown, provider: string, url: string, warnings: ModelCallWarning[]): ModelResponse {
  const b = obj(body);
  if (!b || !Array.isArray(b.output)) throw invalidResponse(provider, url, 'a response without output', body);
  if (str(b.status) === 'failed') throw failed(b, provider, url);
  let text = '';
  let refused = false;
  const toolCalls: ModelToolCall[] = [];
  const reasoning: ReasoningPart[] = [];
  for (const raw of b.output) {
    const item = obj(raw);
    if (!item) continue;
    if (item.type === 'message') {
      for (const content of arr(item.content)) {
        const c = obj(content);
        if (c?.type === 'output_text') text += str(c.text) ?? '';
        else if (c?.type === 'refusal') {
          refused = true;
          text += str(c.refusal) ?? '';
        }
      }
    } else if (item.type === 'function_call') toolCalls.push(toolCallOf(item));
    else if (item.type === 'reasoning') reasoning.push(reasoningPart(item));
  }
  return {
    text,
    toolCalls,
    finishReason: responsesFinishReason(b, refused, toolCalls.length > 0),
    usage: responsesUsage(b.usage),
    ...(reasoning.length > 0 ? { reasoning } : {}),
    response: metadataOf(b),
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}

/**
 * Turns the events of a streamed response into stream parts. The stream ends
 * at `response.completed` or `response.incomplete`; `response.failed` and
 * `error` events throw.
 */
export async function* responsesStreamParts(
  events: AsyncIterable<SseEvent>, provider: string, url: string, warnings: ModelCallWarning[],
): AsyncGenerator<ModelStreamPart> {
  const calls = new Map<string, { callId: string; args: string }>();
  // The summary index each reasoning item is at, to put a paragraph break between its summary parts.
  const summaryAt = new Map<string, number>();
  let refused = false;
  let sawCalls = false;
  for await (const event of events) {
    // An event with no data is a keep-alive; one that is not a JSON object is a broken answer.
    const data: Wire | undefined = eventJson(event.data, provider, url);
    if (!data) continue;
    const type = str(data.type) ?? event.event;
    const item = obj(data.item);
    switch (type) {
      case 'response.created':
        yield { type: 'response-metadata', ...metadataOf(obj(data.response)) };
        if (warnings.length > 0) yield { type: 'warnings', warnings };
        break;
      case 'response.output_item.added':
        if (item?.type === 'function_call') {
          const call = { callId: str(item.call_id) ?? str(item.id) ?? '', args: '' };
          calls.set(str(item.id) ?? call.callId, call);
          sawCalls = true;
          yield { type: 'tool-call-start', toolCallId: call.callId, toolName: str(item.name) ?? '' };
        }
        break;
      case 'response.output_text.delta':
      case 'response.refusal.delta': {
        if (type === 'response.refusal.delta') refused = true;
        const delta = str(data.delta);
        if (delta) yield { type: 'text-delta', delta };
        break;
      }
      case 'response.reasoning_summary_text.delta': {
        const itemId = str(data.item_id) ?? '';
        const index = num(data.summary_index) ?? 0;
        const at = summaryAt.get(itemId);
        if (at !== undefined && index > at) yield { type: 'reasoning-delta', delta: '\n\n' };
        summaryAt.set(itemId, index);
        const delta = str(data.delta);
        if (delta) yield { type: 'reasoning-delta', delta };
        break;
      }
      case 'response.function_call_arguments.delta': {
        const call = calls.get(str(data.item_id) ?? '');
        const delta = str(data.delta);
        if (call && delta) {
          call.args += delta;
          yield { type: 'tool-call-delta', toolCallId: call.callId, argsTextDelta: delta };
        }
        break;
      }
      case 'response.output_item.done':
        if (item?.type === 'function_call') {
          const call = calls.get(str(item.id) ?? '');
          const done = toolCallOf(item);
          // The finished item carries the whole arguments; the deltas are the fallback.
          yield { type: 'tool-call', toolCall: str(item.arguments) === undefined && call ? { ...done, args: parseToolArgs(call.args) } : done };
        } else if (item?.type === 'reasoning') {
          yield { type: 'reasoning', reasoning: reasoningPart(item) };
        } else if (item?.type === 'message' && arr(item.content).some((c) => obj(c)?.type === 'refusal')) {
          refused = true;
        }
        break;
      case 'response.completed':
      case 'response.incomplete': {
        const response = obj(data.response);
        yield { type: 'finish', finishReason: responsesFinishReason(response, refused, sawCalls), usage: responsesUsage(response?.usage) };
        return;
      }
      case 'response.failed':
        throw failed(obj(data.response), provider, url);
      case 'error':
        throw answerError(provider, url, obj(data.error) ?? data);
      default:
        break; // in_progress, content_part and *.done events add nothing the deltas and items do not
    }
  }
  throw streamEndedEarly(provider, url);
}

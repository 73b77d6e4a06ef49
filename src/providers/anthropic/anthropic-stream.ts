/**
 * The Messages API's event stream → Cairn stream parts. The API sends
 * message_start, then per content block a start, deltas and a stop (each
 * block by its `index`, so parallel tool calls stay apart), message_delta with
 * the stop reason and the output count, and message_stop; ping at any time,
 * and `error` when the turn fails after the answer began.
 */
import type { JsonValue } from '../../agent/json.js';
import { APICallError } from '../../errors/index.js';
import type { FinishReason, ModelCallWarning, ModelStreamPart } from '../../models/types.js';
import { eventJson, parseToolArgs, readSse, requestIdOf } from '../utils/index.js';
import type { WireUsage } from './anthropic-api.js';
import { streamErrorOf } from './anthropic-error.js';
import { finishReasonOf, redactedPart, thinkingPart, usageOf } from './anthropic-response.js';

type OpenBlock =
  | { kind: 'text' }
  | { kind: 'thinking'; text: string; signature?: string }
  | { kind: 'redacted'; data: string }
  | { kind: 'tool'; id: string; name: string; json: string; input: JsonValue }
  | { kind: 'other' };

interface StreamEvent {
  type?: string;
  index?: number;
  message?: { id?: string; model?: string; usage?: WireUsage };
  content_block?: Record<string, unknown>;
  delta?: Record<string, unknown>;
  usage?: WireUsage;
}

const str = (value: unknown): string => (typeof value === 'string' ? value : '');

function openBlock(block: Record<string, unknown> | undefined): OpenBlock {
  switch (block?.type) {
    case 'text':
      return { kind: 'text' };
    case 'thinking':
      return { kind: 'thinking', text: str(block.thinking), ...(typeof block.signature === 'string' ? { signature: block.signature } : {}) };
    case 'redacted_thinking':
      return { kind: 'redacted', data: str(block.data) };
    case 'tool_use':
      return { kind: 'tool', id: str(block.id), name: str(block.name), json: '', input: (block.input ?? {}) as JsonValue };
    default:
      return { kind: 'other' };
  }
}

/** Usage fields present in a later event replace the ones seen before (message_delta counts are cumulative). */
function mergeUsage(base: WireUsage, update: WireUsage | undefined): WireUsage {
  const out: WireUsage = { ...base };
  for (const [key, value] of Object.entries(update ?? {})) {
    if (typeof value === 'number') (out as Record<string, number>)[key] = value;
  }
  return out;
}

export async function* streamParts(
  response: Response,
  options: { url: string; signal?: AbortSignal; warnings: ModelCallWarning[] },
): AsyncGenerator<ModelStreamPart> {
  const requestId = requestIdOf(response.headers);
  const blocks = new Map<number, OpenBlock>();
  let usage: WireUsage = {};
  let finishReason: FinishReason = 'other';
  for await (const sse of readSse(response, options.signal, { provider: 'anthropic', url: options.url })) {
    // An event with no data is a keep-alive; one that is not a JSON object is a broken answer.
    const event = eventJson(sse.data, 'anthropic', options.url) as StreamEvent | undefined;
    if (!event) continue;
    const index = typeof event.index === 'number' ? event.index : -1;
    switch (event.type) {
      case 'message_start': {
        usage = mergeUsage(usage, event.message?.usage);
        yield {
          type: 'response-metadata',
          ...(event.message?.id !== undefined ? { id: event.message.id } : {}),
          ...(event.message?.model !== undefined ? { modelId: event.message.model } : {}),
        };
        if (options.warnings.length > 0) yield { type: 'warnings', warnings: options.warnings };
        break;
      }
      case 'content_block_start': {
        const block = openBlock(event.content_block);
        blocks.set(index, block);
        if (block.kind === 'tool') yield { type: 'tool-call-start', toolCallId: block.id, toolName: block.name };
        if (block.kind === 'text' && str(event.content_block?.text) !== '') yield { type: 'text-delta', delta: str(event.content_block?.text) };
        if (block.kind === 'thinking' && block.text !== '') yield { type: 'reasoning-delta', delta: block.text };
        break;
      }
      case 'content_block_delta': {
        const block = blocks.get(index);
        const delta = event.delta ?? {};
        if (!block) break;
        if (delta.type === 'text_delta' && block.kind === 'text') {
          if (str(delta.text) !== '') yield { type: 'text-delta', delta: str(delta.text) };
        } else if (delta.type === 'input_json_delta' && block.kind === 'tool') {
          const piece = str(delta.partial_json);
          block.json += piece;
          if (piece !== '') yield { type: 'tool-call-delta', toolCallId: block.id, argsTextDelta: piece };
        } else if (delta.type === 'thinking_delta' && block.kind === 'thinking') {
          block.text += str(delta.thinking);
          if (str(delta.thinking) !== '') yield { type: 'reasoning-delta', delta: str(delta.thinking) };
        } else if (delta.type === 'signature_delta' && block.kind === 'thinking') {
          block.signature = (block.signature ?? '') + str(delta.signature);
        }
        break;
      }
      case 'content_block_stop': {
        const block = blocks.get(index);
        blocks.delete(index);
        if (block?.kind === 'tool') {
          // A call whose input came whole in its start event has no deltas.
          const args = block.json !== '' ? parseToolArgs(block.json) : block.input;
          yield { type: 'tool-call', toolCall: { toolCallId: block.id, toolName: block.name, args } };
        } else if (block?.kind === 'thinking') {
          yield { type: 'reasoning', reasoning: thinkingPart(block.text, block.signature) };
        } else if (block?.kind === 'redacted') {
          yield { type: 'reasoning', reasoning: redactedPart(block.data) };
        }
        break;
      }
      case 'message_delta':
        usage = mergeUsage(usage, event.usage);
        if (event.delta && 'stop_reason' in event.delta) finishReason = finishReasonOf(event.delta.stop_reason as string | null);
        break;
      case 'message_stop':
        yield { type: 'finish', finishReason, usage: usageOf(usage) };
        return;
      case 'error':
        throw streamErrorOf(event, options.url, requestId);
      default:
        // ping, and event types the API may add later.
        break;
    }
  }
  throw new APICallError({
    message: 'The anthropic stream ended early, without message_stop.',
    provider: 'anthropic',
    url: options.url,
    statusCode: response.status,
    isRetryable: true,
    ...(requestId !== undefined ? { requestId } : {}),
  });
}

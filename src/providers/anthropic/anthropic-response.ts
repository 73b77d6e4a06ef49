/**
 * A Messages API answer → a Cairn response: text, tool calls, reasoning parts
 * that carry what the API needs to accept them again, finish reason, usage.
 */
import type { JsonValue } from '../../agent/json.js';
import type {
  FinishReason, ModelCallWarning, ModelResponse, ModelToolCall, ReasoningPart, Usage,
} from '../../models/types.js';
import type { MessagesResponse, WireUsage } from './anthropic-api.js';
import { PROVIDER_KEY } from './anthropic-messages.js';

/** `stop_reason` → Cairn's finish reason; an unknown or missing one is `other`. */
export function finishReasonOf(stopReason: string | null | undefined): FinishReason {
  switch (stopReason) {
    case 'end_turn':
    case 'stop_sequence':
      return 'stop';
    case 'tool_use':
      return 'tool-calls';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'refusal':
      return 'refusal';
    default:
      // pause_turn (a server tool paused the turn) and reasons added later.
      return 'other';
  }
}

const count = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);

/**
 * The API counts uncached input, cache reads and cache writes apart; Cairn's
 * `inputTokens` is their sum, with the cached parts also given on their own.
 */
export function usageOf(usage: WireUsage | undefined): Usage {
  const input = count(usage?.input_tokens) ?? 0;
  const output = count(usage?.output_tokens) ?? 0;
  const read = count(usage?.cache_read_input_tokens);
  const write = count(usage?.cache_creation_input_tokens);
  const inputTokens = input + (read ?? 0) + (write ?? 0);
  return {
    inputTokens,
    outputTokens: output,
    totalTokens: inputTokens + output,
    ...(read !== undefined ? { cacheReadTokens: read } : {}),
    ...(write !== undefined ? { cacheWriteTokens: write } : {}),
  };
}

export function thinkingPart(text: string, signature: string | undefined): ReasoningPart {
  return { type: 'reasoning', text, ...(signature !== undefined ? { providerMetadata: { [PROVIDER_KEY]: { signature } } } : {}) };
}

export function redactedPart(data: string): ReasoningPart {
  return { type: 'reasoning', text: '', providerMetadata: { [PROVIDER_KEY]: { redactedData: data } } };
}

export function responseOf(answer: MessagesResponse, warnings: ModelCallWarning[]): ModelResponse {
  let text = '';
  const toolCalls: ModelToolCall[] = [];
  const reasoning: ReasoningPart[] = [];
  for (const block of answer.content) {
    if (block.type === 'text' && typeof block.text === 'string') {
      text += block.text;
    } else if (block.type === 'tool_use') {
      toolCalls.push({ toolCallId: String(block.id), toolName: String(block.name), args: (block.input ?? {}) as JsonValue });
    } else if (block.type === 'thinking') {
      reasoning.push(thinkingPart(String(block.thinking ?? ''), typeof block.signature === 'string' ? block.signature : undefined));
    } else if (block.type === 'redacted_thinking' && typeof block.data === 'string') {
      reasoning.push(redactedPart(block.data));
    }
    // Other blocks (server tool use and its results) are not part of Cairn's model spec.
  }
  return {
    text,
    toolCalls,
    finishReason: finishReasonOf(answer.stop_reason),
    usage: usageOf(answer.usage),
    ...(reasoning.length > 0 ? { reasoning } : {}),
    response: {
      ...(answer.id !== undefined ? { id: answer.id } : {}),
      ...(answer.model !== undefined ? { modelId: answer.model } : {}),
    },
    ...(warnings.length > 0 ? { warnings } : {}),
  };
}

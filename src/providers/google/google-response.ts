/**
 * Reading Gemini's parts into a turn: text, thought summaries and signatures
 * as reasoning parts, function calls as tool calls. The same reader serves a
 * whole response and a stream's chunks, so both make the same turn.
 */
import type { JsonValue } from '../../agent/json.js';
import type {
  FinishReason, ModelStreamPart, ModelToolCall, ProviderMetadata, ReasoningPart, Usage,
} from '../../models/types.js';
import type { GeminiPart, GeminiResponse, GeminiUsageMetadata } from './google-api.js';
import { PROVIDER_KEY, type GoogleReasoningMetadata, type GoogleToolCallMetadata } from './google-messages.js';

function metadataOf(meta: GoogleReasoningMetadata | GoogleToolCallMetadata): ProviderMetadata {
  const own: Record<string, JsonValue> = {};
  for (const [key, value] of Object.entries(meta)) if (value !== undefined) own[key] = value as JsonValue;
  return { [PROVIDER_KEY]: own };
}

/** Builds a turn from parts in order, and says what each part adds as stream parts. */
export class TurnReader {
  text = '';
  readonly reasoning: ReasoningPart[] = [];
  readonly toolCalls: ModelToolCall[] = [];
  private thought: { text: string; signature?: string } | null = null;

  /** Takes the next parts of the candidate; returns the stream parts they make. */
  read(parts: readonly GeminiPart[]): ModelStreamPart[] {
    const out: ModelStreamPart[] = [];
    for (const part of parts) {
      if (part.functionCall) {
        out.push(...this.closeThought(), ...this.call(part));
      } else if (part.thought === true) {
        // A signature ends a thought part: what follows is a new one, with its own.
        if (this.thought?.signature !== undefined) out.push(...this.closeThought());
        this.thought ??= { text: '' };
        if (part.text) {
          this.thought.text += part.text;
          out.push({ type: 'reasoning-delta', delta: part.text });
        }
        if (part.thoughtSignature !== undefined) this.thought.signature = part.thoughtSignature;
      } else if (typeof part.text === 'string') {
        out.push(...this.closeThought());
        if (part.text !== '') {
          this.text += part.text;
          out.push({ type: 'text-delta', delta: part.text });
        }
        if (part.thoughtSignature !== undefined) {
          // Kept as a reasoning part without text, so the signature goes back on the answer's text part.
          const reasoning: ReasoningPart = { type: 'reasoning', text: '', providerMetadata: metadataOf({ part: 'text', thoughtSignature: part.thoughtSignature }) };
          this.reasoning.push(reasoning);
          out.push({ type: 'reasoning', reasoning });
        }
      }
      // Other parts (inline images, executable code) are not part of Cairn's turn.
    }
    return out;
  }

  /** Ends the turn: a thought part still open is complete now. */
  end(): ModelStreamPart[] {
    return this.closeThought();
  }

  private closeThought(): ModelStreamPart[] {
    if (!this.thought) return [];
    const reasoning: ReasoningPart = {
      type: 'reasoning',
      text: this.thought.text,
      providerMetadata: metadataOf({ part: 'thought', thoughtSignature: this.thought.signature }),
    };
    this.thought = null;
    this.reasoning.push(reasoning);
    return [{ type: 'reasoning', reasoning }];
  }

  private call(part: GeminiPart): ModelStreamPart[] {
    const call = part.functionCall!;
    // Gemini may give no ids: the call's place in the turn is stable across a replay of the same answer.
    const toolCallId = call.id ?? `call_${this.toolCalls.length}`;
    const args: JsonValue = call.args ?? {};
    const meta: GoogleToolCallMetadata = { thoughtSignature: part.thoughtSignature, id: call.id };
    const toolCall: ModelToolCall = {
      toolCallId,
      toolName: call.name,
      args,
      ...(meta.thoughtSignature !== undefined || meta.id !== undefined ? { providerMetadata: metadataOf(meta) } : {}),
    };
    this.toolCalls.push(toolCall);
    // Gemini sends each call whole, in one part: one delta carries all of its arguments.
    return [
      { type: 'tool-call-start', toolCallId, toolName: call.name },
      { type: 'tool-call-delta', toolCallId, argsTextDelta: JSON.stringify(args) },
      { type: 'tool-call', toolCall },
    ];
  }
}

/** Not Gemini's: what {@link finishOf} says when the prompt itself was blocked (promptFeedback.blockReason). */
const PROMPT_BLOCKED = 'PROMPT_BLOCKED';

const FILTERED = new Set([
  PROMPT_BLOCKED, 'SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY', 'IMAGE_PROHIBITED_CONTENT', 'IMAGE_RECITATION',
]);
const FAILED = new Set(['MALFORMED_FUNCTION_CALL', 'UNEXPECTED_TOOL_CALL', 'TOO_MANY_TOOL_CALLS']);

/** Gemini's finish reason as Cairn's; STOP with function calls is `tool-calls`. */
export function finishReasonOf(reason: string, hasToolCalls: boolean): FinishReason {
  if (reason === 'STOP') return hasToolCalls ? 'tool-calls' : 'stop';
  if (reason === 'MAX_TOKENS') return 'length';
  if (FILTERED.has(reason)) return 'content-filter';
  if (FAILED.has(reason)) return 'error';
  return 'other';
}

/**
 * The raw finish of a response or of a stream's chunk: its candidate's
 * reason, or {@link PROMPT_BLOCKED}; undefined while the answer goes on.
 */
export function finishOf(response: GeminiResponse): string | undefined {
  const reason = response.candidates?.[0]?.finishReason;
  if (reason) return reason;
  return response.promptFeedback?.blockReason ? PROMPT_BLOCKED : undefined;
}

/**
 * Gemini's counts as Cairn's. `promptTokenCount` already holds the cached
 * tokens; tool-use prompt tokens are input too. `candidatesTokenCount` leaves
 * the thoughts out, so `outputTokens` adds `thoughtsTokenCount` (of which
 * `reasoningTokens` is the part).
 */
export function usageOf(usage: GeminiUsageMetadata | undefined): Usage {
  const inputTokens = (usage?.promptTokenCount ?? 0) + (usage?.toolUsePromptTokenCount ?? 0);
  const outputTokens = (usage?.candidatesTokenCount ?? 0) + (usage?.thoughtsTokenCount ?? 0);
  return {
    inputTokens,
    outputTokens,
    totalTokens: usage?.totalTokenCount ?? inputTokens + outputTokens,
    ...(usage?.cachedContentTokenCount !== undefined ? { cacheReadTokens: usage.cachedContentTokenCount } : {}),
    ...(usage?.thoughtsTokenCount !== undefined ? { reasoningTokens: usage.thoughtsTokenCount } : {}),
  };
}

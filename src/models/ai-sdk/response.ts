/**
 * What an AI SDK model answered, as Cairn's model spec says it: finish
 * reasons of both shapes, usage of both shapes, warnings of every version,
 * and the generated content.
 */
import type {
  FinishReason, ModelCallWarning, ModelResponse, ModelToolCall, ProviderMetadata, ReasoningPart, Usage,
} from '../types.js';
import { parseToolArgs } from '../../providers/utils/index.js';
import { toJson, type JsonValue } from '../../agent/json.js';
import { TEXT_PART_METADATA } from './request.js';
import type { ContentPart, FinishReasonValue, GenerateResult, SpecWarning, UsageV2, UsageV3 } from './spec.js';

const FINISH_REASONS = new Set<FinishReason>(['stop', 'tool-calls', 'length', 'content-filter', 'error', 'other']);

/** v2's string or v3/v4's `{ unified, raw }`; `unknown` (v2) and `interrupted` (v4) are `other`. */
export function finishReasonOf(value: FinishReasonValue | undefined): FinishReason {
  const unified = typeof value === 'string' ? value : value?.unified;
  return FINISH_REASONS.has(unified as FinishReason) ? (unified as FinishReason) : 'other';
}

const count = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);

/**
 * Cairn counts every input token in `inputTokens`, cached ones included. v3 and
 * v4 say so too (`total` = noCache + cacheRead + cacheWrite); v2 has only the
 * provider's own `inputTokens` and `cachedInputTokens`.
 */
export function usageOf(raw: UsageV2 | UsageV3 | undefined): Usage {
  const usage = raw ?? {};
  if (typeof usage.inputTokens === 'object' || typeof usage.outputTokens === 'object') {
    const input = (usage as UsageV3).inputTokens ?? {};
    const output = (usage as UsageV3).outputTokens ?? {};
    const cacheRead = count(input.cacheRead);
    const cacheWrite = count(input.cacheWrite);
    const inputTokens = count(input.total) ?? (count(input.noCache) ?? 0) + (cacheRead ?? 0) + (cacheWrite ?? 0);
    const reasoning = count(output.reasoning);
    const outputTokens = count(output.total) ?? (count(output.text) ?? 0) + (reasoning ?? 0);
    return {
      inputTokens,
      outputTokens,
      totalTokens: inputTokens + outputTokens,
      ...(cacheRead !== undefined ? { cacheReadTokens: cacheRead } : {}),
      ...(cacheWrite !== undefined ? { cacheWriteTokens: cacheWrite } : {}),
      ...(reasoning !== undefined ? { reasoningTokens: reasoning } : {}),
    };
  }
  const flat = usage as UsageV2;
  const inputTokens = count(flat.inputTokens) ?? 0;
  const outputTokens = count(flat.outputTokens) ?? 0;
  const cached = count(flat.cachedInputTokens);
  const reasoning = count(flat.reasoningTokens);
  return {
    inputTokens,
    outputTokens,
    totalTokens: count(flat.totalTokens) ?? inputTokens + outputTokens,
    ...(cached !== undefined ? { cacheReadTokens: cached } : {}),
    ...(reasoning !== undefined ? { reasoningTokens: reasoning } : {}),
  };
}

/** Every version's warnings in Cairn's two shapes; a feature the model did not take is an unsupported setting. */
export function warningsOf(warnings: readonly SpecWarning[] | undefined): ModelCallWarning[] {
  return (warnings ?? []).map((w): ModelCallWarning => {
    switch (w.type) {
      case 'unsupported-setting':
        return { type: 'unsupported-setting', setting: String(w.setting), ...(w.details ? { details: w.details } : {}) };
      case 'unsupported':
        return { type: 'unsupported-setting', setting: w.feature, ...(w.details ? { details: w.details } : {}) };
      case 'unsupported-tool':
        return { type: 'other', message: `Tool ${w.tool?.name ?? '(unnamed)'} is not supported${w.details ? `: ${w.details}` : '.'}` };
      case 'compatibility':
        return { type: 'other', message: `${w.feature} runs in a compatibility mode${w.details ? `: ${w.details}` : '.'}` };
      case 'deprecated':
        return { type: 'other', message: `${w.setting} is deprecated: ${w.message}` };
      default:
        return { type: 'other', message: String((w as { message?: unknown }).message ?? JSON.stringify(w)) };
    }
  });
}

/** Plain JSON (no `undefined`, no class instances): it goes into checkpoints. */
export function metadataOf(value: unknown): ProviderMetadata | undefined {
  if (value === null || typeof value !== 'object' || Object.keys(value).length === 0) return undefined;
  return toJson<ProviderMetadata>(value);
}

/**
 * Collects shallow-merged own-key metadata of text parts (and of their stream
 * start / end parts), for {@link turnMetadataOf}.
 */
export function mergeOwn(into: Record<string, JsonValue> | undefined, metadata: unknown, key: string): Record<string, JsonValue> | undefined {
  const own = (metadata as Record<string, unknown> | undefined)?.[key];
  if (own === null || typeof own !== 'object' || Array.isArray(own)) return into;
  return { ...into, ...toJson<Record<string, JsonValue>>(own) };
}

/**
 * The turn's providerMetadata: the answer's own, plus what its text carried
 * under the provider's key (an OpenAI Responses message item id, for example),
 * kept under `cairnTextPart` so the next request puts it back on the text.
 */
export function turnMetadataOf(response: unknown, text: Record<string, JsonValue> | undefined, key: string): ProviderMetadata | undefined {
  const base = metadataOf(response) ?? {};
  if (text && Object.keys(text).length > 0) {
    const own = base[key];
    base[key] = { ...(own !== null && typeof own === 'object' && !Array.isArray(own) ? own : {}), [TEXT_PART_METADATA]: text };
  }
  return Object.keys(base).length > 0 ? base : undefined;
}

export function toolCallOf(part: { toolCallId: string; toolName: string; input: unknown; providerMetadata?: unknown }): ModelToolCall {
  const providerMetadata = metadataOf(part.providerMetadata);
  return {
    toolCallId: part.toolCallId,
    toolName: part.toolName,
    args: typeof part.input === 'string' ? parseToolArgs(part.input) : toJson(part.input ?? {}),
    ...(providerMetadata ? { providerMetadata } : {}),
  };
}

export function reasoningOf(text: string, providerMetadata: unknown): ReasoningPart {
  const metadata = metadataOf(providerMetadata);
  return { type: 'reasoning', text, ...(metadata ? { providerMetadata: metadata } : {}) };
}

export function responseMetadataOf(response: { id?: unknown; modelId?: unknown } | undefined): ModelResponse['response'] {
  const out: NonNullable<ModelResponse['response']> = {};
  if (typeof response?.id === 'string') out.id = response.id;
  if (typeof response?.modelId === 'string') out.modelId = response.modelId;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** A whole `doGenerate` result. Calls the provider ran itself (`providerExecuted`) are not Cairn's to dispatch. */
export function toModelResponse(result: GenerateResult, key: string, ownWarnings: ModelCallWarning[]): ModelResponse {
  let text = '';
  let textMetadata: Record<string, JsonValue> | undefined;
  const reasoning: ReasoningPart[] = [];
  const toolCalls: ModelToolCall[] = [];
  for (const part of (result.content ?? []) as ContentPart[]) {
    if (part.type === 'text') {
      text += part.text;
      textMetadata = mergeOwn(textMetadata, part.providerMetadata, key);
    } else if (part.type === 'reasoning') {
      reasoning.push(reasoningOf(part.text, part.providerMetadata));
    } else if (part.type === 'tool-call' && !part.providerExecuted) {
      toolCalls.push(toolCallOf(part));
    }
  }
  const warnings = [...ownWarnings, ...warningsOf(result.warnings)];
  const response = responseMetadataOf(result.response);
  const providerMetadata = turnMetadataOf(result.providerMetadata, textMetadata, key);
  return {
    text,
    toolCalls,
    finishReason: finishReasonOf(result.finishReason),
    usage: usageOf(result.usage),
    ...(reasoning.length > 0 ? { reasoning } : {}),
    ...(response ? { response } : {}),
    ...(warnings.length > 0 ? { warnings } : {}),
    ...(providerMetadata ? { providerMetadata } : {}),
  };
}

/**
 * The model spec: the small, type-only contract every model (the scripted mock,
 * later the provider adapters) implements. The engine only ever talks to this.
 */
import type { JsonValue } from '../agent/json.js';
import type { EffortLevel } from './profiles.js';

export type FinishReason = 'stop' | 'tool-calls' | 'length' | 'content-filter' | 'error' | 'other';

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}

export interface ModelToolCall {
  toolCallId: string;
  toolName: string;
  args: JsonValue;
}

/** One message of the conversation, as the model sees it. Plain JSON. */
export type ModelMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ModelToolCall[] }
  | { role: 'tool'; toolCallId: string; toolName: string; content: JsonValue; isError?: boolean };

export interface ModelToolSpec {
  name: string;
  description?: string;
  parameters: JsonValue;
}

export type ToolChoice = 'auto' | 'none' | 'required' | { toolName: string };

/**
 * Sampling and reasoning settings a run passes to its model on every call.
 * Models that do not take a setting ignore it; `doctor` (cairn/headless) says
 * which settings a known model refuses.
 */
export interface ModelSettings {
  temperature?: number;
  topP?: number;
  /** How hard a reasoning model thinks: 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max'. */
  effort?: EffortLevel;
  /** Ask the provider to cache the repeated prompt prefix, where it needs asking. */
  promptCaching?: boolean;
}

export interface ModelRequest {
  messages: ModelMessage[];
  tools: ModelToolSpec[];
  toolChoice: ToolChoice;
  /** The run's sampling and reasoning settings; absent when the run set none. */
  settings?: ModelSettings;
  /** Set for a structured-output (json strategy) turn. */
  responseFormat?: { type: 'json'; schema?: JsonValue; name?: string };
  signal?: AbortSignal;
}

export interface ModelResponse {
  text: string;
  toolCalls: ModelToolCall[];
  finishReason: FinishReason;
  usage: Usage;
}

export type ModelStreamPart =
  | { type: 'text-delta'; delta: string }
  | { type: 'tool-call'; toolCall: ModelToolCall }
  | { type: 'finish'; finishReason: FinishReason; usage: Usage };

export interface LanguageModel {
  readonly specificationVersion: 'cairn-model-1';
  readonly provider: string;
  readonly modelId: string;
  /** One complete turn. */
  doGenerate(request: ModelRequest): Promise<ModelResponse>;
  /** The same turn as a stream of parts; the last part is `finish`. */
  doStream?(request: ModelRequest): AsyncIterable<ModelStreamPart>;
}

export const emptyUsage = (): Usage => ({ inputTokens: 0, outputTokens: 0, totalTokens: 0 });

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  };
}

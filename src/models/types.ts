/**
 * The model spec: the small, type-only contract every model implements (the
 * scripted mock, the provider adapters in cairn/openai, cairn/anthropic,
 * cairn/google and cairn/openai-compatible, and your own). The engine only
 * ever talks to this. Everything in a request and a response is plain JSON
 * (bytes travel as base64), because turns and messages go into checkpoints.
 */
import type { JsonValue } from '../agent/json.js';
import type { EffortLevel } from './profiles.js';

/**
 * Why a turn ended. `refusal`: the model declined to answer (the run stops
 * with reason `refusal`, like `content-filter`); `error`: the provider ended
 * the turn with an error.
 */
export type FinishReason = 'stop' | 'tool-calls' | 'length' | 'content-filter' | 'refusal' | 'error' | 'other';

/**
 * Token counts of one call (or, on results, of the whole run).
 * `inputTokens` counts every input token, cached ones included;
 * `cacheReadTokens` and `cacheWriteTokens` are the parts of it that were read
 * from or written to the provider's prompt cache. `reasoningTokens` is the part
 * of `outputTokens` the model spent thinking. The three optional counts are
 * absent when the provider reports none.
 */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  reasoningTokens?: number;
}

/**
 * Data a provider needs back on a later request, keyed by provider name
 * (`anthropic`, `openai`, `google`, ...). An adapter reads only its own key.
 */
export type ProviderMetadata = Record<string, JsonValue>;

export interface ModelToolCall {
  toolCallId: string;
  toolName: string;
  args: JsonValue;
  /** For example Gemini's thought signature of a function call. */
  providerMetadata?: ProviderMetadata;
}

/** Plain text. */
export interface TextPart {
  type: 'text';
  text: string;
}

/**
 * An image, by URL or as base64 bytes (`data`). Exactly one of `url` and
 * `data` is set; `mediaType` is required with `data`.
 */
export interface ImagePart {
  type: 'image';
  url?: string;
  data?: string;
  mediaType?: string;
}

/** A file (a PDF, for example), by URL or as base64 bytes. `mediaType` is required. */
export interface FilePart {
  type: 'file';
  url?: string;
  data?: string;
  mediaType: string;
  filename?: string;
}

export type UserContentPart = TextPart | ImagePart | FilePart;

/**
 * What a model thought before it answered, as the provider returned it.
 * `providerMetadata` holds what the provider needs to accept the part again,
 * byte for byte (an Anthropic thinking block's `signature` or a
 * `redacted_thinking` block's `data`, an OpenAI Responses reasoning item's id
 * and `encrypted_content`). An adapter sends back only the parts that carry
 * its own provider's key, so reasoning never crosses to another provider.
 */
export interface ReasoningPart {
  type: 'reasoning';
  text: string;
  providerMetadata?: ProviderMetadata;
}

/**
 * A tool result made of parts (text, images, files) instead of one JSON value.
 * A tool's `toModelOutput` returns it (see {@link toolContent}); wires that take
 * images in tool results send the parts, the others send the text parts.
 */
export interface ToolContent {
  type: 'content';
  parts: UserContentPart[];
}

/** One message of the conversation, as the model sees it. Plain JSON. */
export type ModelMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | UserContentPart[] }
  | {
    role: 'assistant';
    content: string;
    toolCalls?: ModelToolCall[];
    /** The turn's reasoning, in the order the provider produced it; it came before the text and the calls. */
    reasoning?: ReasoningPart[];
    /** What the provider attached to the turn as a whole (for example an OpenAI Responses message id). */
    providerMetadata?: ProviderMetadata;
  }
  | { role: 'tool'; toolCallId: string; toolName: string; content: JsonValue; isError?: boolean };

export interface ModelToolSpec {
  name: string;
  description?: string;
  parameters: JsonValue;
}

export type ToolChoice = 'auto' | 'none' | 'required' | { toolName: string };

/**
 * Sampling and reasoning settings a run passes to its model on every call.
 * A model that does not take a setting leaves it out of the request and says
 * so in the response's `warnings`; `doctor` (cairn/headless) says before a run
 * which settings a known model refuses.
 */
export interface ModelSettings {
  temperature?: number;
  topP?: number;
  /** How hard a reasoning model thinks: 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max'. */
  effort?: EffortLevel;
  /** Ask the provider to cache the repeated prompt prefix, where it needs asking. */
  promptCaching?: boolean;
  /** Most tokens the model may produce in one turn. */
  maxOutputTokens?: number;
}

/** Options for one provider, under its name: `{ anthropic: { ... }, openai: { ... } }`. Passed through unchanged. */
export type ProviderOptions = Record<string, Record<string, JsonValue>>;

export interface ModelRequest {
  messages: ModelMessage[];
  tools: ModelToolSpec[];
  toolChoice: ToolChoice;
  /** The run's sampling and reasoning settings; absent when the run set none. */
  settings?: ModelSettings;
  /**
   * Set for a structured-output (json strategy) turn: the answer is JSON of this
   * schema. The loop's tools stay in `tools` (with `toolChoice: 'none'`) so the
   * request prefix stays the loop's.
   */
  responseFormat?: { type: 'json'; schema?: JsonValue; name?: string };
  /** The run's `providerOptions`; an adapter reads its own provider's entry. */
  providerOptions?: ProviderOptions;
  signal?: AbortSignal;
}

/** A setting the model left out of the request, or another thing the caller should know. */
export type ModelCallWarning =
  | { type: 'unsupported-setting'; setting: string; details?: string }
  | { type: 'other'; message: string };

/** What the provider said about the response itself. */
export interface ResponseMetadata {
  /** The provider's id of the response. */
  id?: string;
  /** The model id the provider reports (a dated snapshot, for example). */
  modelId?: string;
}

export interface ModelResponse {
  text: string;
  toolCalls: ModelToolCall[];
  finishReason: FinishReason;
  usage: Usage;
  reasoning?: ReasoningPart[];
  response?: ResponseMetadata;
  warnings?: ModelCallWarning[];
  providerMetadata?: ProviderMetadata;
}

/**
 * The parts of a streamed turn, in order. `text-delta`, `reasoning-delta` and
 * the tool-call parts are content: an error after the first of them is a
 * stream that broke off, which never fails over to another model. The last
 * part is `finish`. A stream may end with an `error` part instead of throwing.
 */
export type ModelStreamPart =
  | { type: 'response-metadata'; id?: string; modelId?: string }
  | { type: 'text-delta'; delta: string }
  | { type: 'reasoning-delta'; delta: string }
  /** A finished reasoning part, with the data the provider needs back. */
  | { type: 'reasoning'; reasoning: ReasoningPart }
  | { type: 'tool-call-start'; toolCallId: string; toolName: string }
  /** A piece of a call's arguments (JSON text). */
  | { type: 'tool-call-delta'; toolCallId: string; argsTextDelta: string }
  /** The finished call with its parsed arguments. */
  | { type: 'tool-call'; toolCall: ModelToolCall }
  | { type: 'warnings'; warnings: ModelCallWarning[] }
  | { type: 'finish'; finishReason: FinishReason; usage: Usage; providerMetadata?: ProviderMetadata }
  | { type: 'error'; error: unknown };

/** The spec version a Cairn model declares. Models of the Vercel AI SDK (`v2`, `v3`, `v4`) are adapted on their own. */
export const MODEL_SPEC_VERSION = 'cairn-model-1';

/** What {@link LanguageModel.keyStatus} reports. */
export interface KeyStatus {
  present: boolean;
  /** The variables the key is read from when none is passed, in order. */
  envVars: readonly string[];
  /** @default true */
  required?: boolean;
}

export interface LanguageModel {
  readonly specificationVersion: 'cairn-model-1';
  /** The provider, as prices, profiles and the breaker key it: `openai`, `anthropic`, `google`, or your own name. */
  readonly provider: string;
  readonly modelId: string;
  /** Which wire the model speaks, when a provider has several (`responses`, `chat`, `messages`, `generate-content`). */
  readonly protocol?: string;
  /**
   * Where the model's API key would come from, checked without a network call
   * (the doctor reads it). `present`: a key was passed or one of `envVars` is
   * set in `env`; `required: false` for servers that need no key.
   */
  keyStatus?(env: Record<string, string | undefined>): KeyStatus;
  /** One complete turn. */
  doGenerate(request: ModelRequest): Promise<ModelResponse>;
  /** The same turn as a stream of parts; the last part is `finish`. */
  doStream?(request: ModelRequest): AsyncIterable<ModelStreamPart>;
}

export const emptyUsage = (): Usage => ({ inputTokens: 0, outputTokens: 0, totalTokens: 0 });

const OPTIONAL_COUNTS = ['cacheReadTokens', 'cacheWriteTokens', 'reasoningTokens'] as const;

/** The sum of two usages; an optional count is present when either side has it. */
export function addUsage(a: Usage, b: Usage): Usage {
  const out: Usage = {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  };
  for (const key of OPTIONAL_COUNTS) {
    if (a[key] !== undefined || b[key] !== undefined) out[key] = (a[key] ?? 0) + (b[key] ?? 0);
  }
  return out;
}

/** A tool result made of parts, for a tool's `toModelOutput`. */
export function toolContent(parts: UserContentPart[]): ToolContent {
  return { type: 'content', parts };
}

/** Whether a tool message's content is a {@link ToolContent} made of parts. */
export function isToolContent(value: unknown): value is ToolContent {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    && (value as { type?: unknown }).type === 'content' && Array.isArray((value as { parts?: unknown }).parts);
}

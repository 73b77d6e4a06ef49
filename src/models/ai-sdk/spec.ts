/**
 * The parts of the Vercel AI SDK's language model specifications (v2, v3, v4)
 * that the adapter reads and writes, written out structurally: Cairn imports
 * no AI SDK package at run time. Each field was checked against the `.d.ts`
 * of @ai-sdk/provider 2.0, 3.0 and 4.0. Where the versions differ the type is
 * the union, and the adapter branches on `specificationVersion`.
 */

export type AISDKSpecVersion = 'v2' | 'v3' | 'v4';

/** The specification versions {@link fromAISDK} adapts. */
export const AI_SDK_SPEC_VERSIONS: readonly AISDKSpecVersion[] = ['v2', 'v3', 'v4'];

/**
 * An AI SDK language model (`LanguageModelV2`, `LanguageModelV3` or
 * `LanguageModelV4`), as far as Cairn needs to know it. Any model a provider
 * package of the AI SDK returns (`openai.chat('gpt-4o')`, `anthropic('claude-...')`)
 * has this shape. The call options are left open (`never`) so that every
 * version's own option type is accepted here.
 */
export interface AISDKLanguageModel {
  readonly specificationVersion: AISDKSpecVersion;
  /** The provider id, often with the API after a dot: `openai.chat`, `openai.responses`, `anthropic.messages`. */
  readonly provider: string;
  readonly modelId: string;
  doGenerate(options: never): PromiseLike<unknown>;
  doStream(options: never): PromiseLike<unknown>;
}

type Options = Record<string, Record<string, unknown>>;

/** v2 and v3: a base64 string, bytes or a URL. v4: tagged. */
export type DataContent = Uint8Array | string | URL;
export type V4FileData = { type: 'data'; data: Uint8Array | string } | { type: 'url'; url: URL };

export type PromptTextPart = { type: 'text'; text: string; providerOptions?: Options };
export type PromptFilePart = { type: 'file'; data: DataContent | V4FileData; mediaType: string; filename?: string; providerOptions?: Options };
export type PromptReasoningPart = { type: 'reasoning'; text: string; providerOptions?: Options };
/** `input` in every version from v2 on (v1's `args` is gone). */
export type PromptToolCallPart = { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown; providerOptions?: Options };

/** The parts of a `content` tool output, per version. */
export type ToolOutputContentPart =
  | { type: 'text'; text: string }
  /** v2 */
  | { type: 'media'; data: string; mediaType: string }
  /** v3 */
  | { type: 'image-data'; data: string; mediaType: string }
  | { type: 'image-url'; url: string }
  | { type: 'file-data'; data: string; mediaType: string; filename?: string }
  | { type: 'file-url'; url: string; mediaType?: string }
  /** v4 */
  | { type: 'file'; data: V4FileData; mediaType: string; filename?: string };

export type ToolResultOutput =
  | { type: 'text' | 'error-text'; value: string }
  | { type: 'json' | 'error-json'; value: unknown }
  | { type: 'content'; value: ToolOutputContentPart[] };

export type PromptToolResultPart = { type: 'tool-result'; toolCallId: string; toolName: string; output: ToolResultOutput; providerOptions?: Options };

export type PromptMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: Array<PromptTextPart | PromptFilePart> }
  | { role: 'assistant'; content: Array<PromptTextPart | PromptReasoningPart | PromptToolCallPart> }
  | { role: 'tool'; content: PromptToolResultPart[] };

/** A function tool: `inputSchema` in v2, v3 and v4 alike. */
export type FunctionTool = { type: 'function'; name: string; description?: string; inputSchema: unknown };

export type ToolChoiceOption = { type: 'auto' } | { type: 'none' } | { type: 'required' } | { type: 'tool'; toolName: string };

export interface CallOptions {
  prompt: PromptMessage[];
  tools?: FunctionTool[];
  toolChoice?: ToolChoiceOption;
  temperature?: number;
  topP?: number;
  maxOutputTokens?: number;
  responseFormat?: { type: 'json'; schema?: unknown; name?: string };
  /** v4 only: the effort levels are Cairn's own plus `provider-default`. */
  reasoning?: string;
  abortSignal?: AbortSignal;
  providerOptions?: Options;
}

type Metadata = Record<string, unknown>;

/** v2: a flat record of counts. */
export interface UsageV2 {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  reasoningTokens?: number;
  cachedInputTokens?: number;
}

/** v3 and v4: nested counts; `inputTokens.total` = noCache + cacheRead + cacheWrite. */
export interface UsageV3 {
  inputTokens: { total?: number; noCache?: number; cacheRead?: number; cacheWrite?: number };
  outputTokens: { total?: number; text?: number; reasoning?: number };
}

/** v2: a string ('unknown' when the provider sent none). v3 and v4: `{ unified, raw }` (v4 adds 'interrupted'). */
export type FinishReasonValue = string | { unified: string; raw?: string };

/** Warnings: v2 `unsupported-setting` / `unsupported-tool` / `other`; v3 and v4 `unsupported` / `compatibility` / `other` (v4 `deprecated`). */
export type SpecWarning =
  | { type: 'unsupported-setting'; setting: string; details?: string }
  | { type: 'unsupported-tool'; tool: { name?: string }; details?: string }
  | { type: 'unsupported' | 'compatibility'; feature: string; details?: string }
  | { type: 'deprecated'; setting: string; message: string }
  | { type: 'other'; message: string };

export type ContentPart =
  | { type: 'text'; text: string; providerMetadata?: Metadata }
  | { type: 'reasoning'; text: string; providerMetadata?: Metadata }
  /** `input` is JSON text in every version. */
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: string; providerExecuted?: boolean; providerMetadata?: Metadata }
  | { type: 'tool-result' | 'file' | 'source' | 'reasoning-file' | 'custom' | 'tool-approval-request' };

export interface GenerateResult {
  content: ContentPart[];
  finishReason: FinishReasonValue;
  usage: UsageV2 | UsageV3;
  providerMetadata?: Metadata;
  response?: { id?: string; modelId?: string };
  warnings?: SpecWarning[];
}

export type StreamPart =
  | { type: 'stream-start'; warnings: SpecWarning[] }
  | { type: 'response-metadata'; id?: string; modelId?: string }
  | { type: 'text-start' | 'text-end'; id: string; providerMetadata?: Metadata }
  | { type: 'text-delta'; id: string; delta: string; providerMetadata?: Metadata }
  | { type: 'reasoning-start' | 'reasoning-end'; id: string; providerMetadata?: Metadata }
  | { type: 'reasoning-delta'; id: string; delta: string; providerMetadata?: Metadata }
  | { type: 'tool-input-start'; id: string; toolName: string; providerExecuted?: boolean; providerMetadata?: Metadata }
  | { type: 'tool-input-delta'; id: string; delta: string }
  | { type: 'tool-input-end'; id: string }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: string; providerExecuted?: boolean; providerMetadata?: Metadata }
  | { type: 'finish'; finishReason: FinishReasonValue; usage: UsageV2 | UsageV3; providerMetadata?: Metadata }
  | { type: 'error'; error: unknown }
  | { type: 'raw' | 'ping' | 'tool-result' | 'file' | 'source' | 'reasoning-file' | 'custom' | 'tool-approval-request' };

/** The adapter's typed view of a model that passed {@link isAISDKModel}. */
export interface CallableModel {
  readonly specificationVersion: AISDKSpecVersion;
  readonly provider: string;
  readonly modelId: string;
  doGenerate(options: CallOptions): PromiseLike<GenerateResult>;
  doStream(options: CallOptions): PromiseLike<{ stream: ReadableStream<StreamPart> }>;
}

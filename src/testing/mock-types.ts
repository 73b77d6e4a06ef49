/**
 * The script of the scripted model (mock-model.ts): its turns, its options,
 * and the model object it makes.
 */
import type { JsonValue } from '../agent/json.js';
import type { FinishReason, LanguageModel, ModelRequest, ModelStreamPart, ReasoningPart, Usage } from '../models/types.js';

/** A tool call the scripted model makes. */
export interface MockToolCall {
  toolName: string;
  /** @default {} */
  args?: JsonValue;
  /** @default generated, see {@link MockModelOptions.generateToolCallId} */
  toolCallId?: string;
}

/** A provider-style failure: turned into a {@link ModelCallError} with this `statusCode`. */
export interface MockStatusError {
  status: number;
  message?: string;
  /** The wait the "provider" asks for, as a real adapter reads it from retry-after: the engine's retry honours it. */
  retryAfterMs?: number;
}

/** One scripted model turn. Every field is optional: `{}` answers with empty text. */
export interface MockTurn {
  /** The answer's text. @default chunks joined, or '' */
  text?: string;
  toolCalls?: MockToolCall[];
  /** @default 'tool-calls' when `toolCalls` is non-empty, else 'stop' */
  finishReason?: FinishReason;
  /** Overrides part or all of the estimated usage (about 4 characters a token). */
  usage?: Partial<Usage>;
  /**
   * Makes the call reject. A plain `{ status, message? }` becomes a {@link ModelCallError}
   * (retryable for 408, 409, 429 and 5xx); anything else, an `Error` included, is thrown as it is.
   */
  error?: MockStatusError | unknown;
  /** How `doStream` splits the text into `text-delta` parts; must join to `text`. @default pieces of 8 characters */
  chunks?: string[];
  /** Reasoning parts the turn returns (streamed before its text), with any provider metadata, as a reasoning model would. */
  reasoning?: ReasoningPart[];
  /** Milliseconds to wait before answering; an abort of `request.signal` ends the wait. @default 0 */
  delayMs?: number;
  /** `doStream` yields `afterChunks` text deltas, then throws `error`: a stream that broke off. `doGenerate` rejects with it. */
  streamError?: { afterChunks: number; error: MockStatusError | unknown };
}

/** A scripted turn, or a function that computes it from the request. */
export type MockResponse = MockTurn | ((request: ModelRequest) => MockTurn | Promise<MockTurn>);

export interface MockModelOptions {
  /** The script: call N is answered by `responses[N - 1]`. */
  responses: MockResponse[];
  /** @default 'mock-model' */
  modelId?: string;
  /** `true`: a call after the last response rejects. `false`: the last response answers again. @default true */
  strict?: boolean;
  /**
   * Ids for scripted tool calls that have none. `stepIndex` is the zero-based call number of this
   * mock, `callIndex` the call's position in the turn.
   * @default (stepIndex, callIndex) => `tool_${callIndex}`
   */
  generateToolCallId?: (stepIndex: number, callIndex: number) => string;
}

/** A request as the mock recorded it: a JSON copy, without the signal. */
export type RecordedModelRequest = Omit<ModelRequest, 'signal'>;

export interface MockLanguageModel extends LanguageModel {
  readonly provider: 'mock';
  doStream(request: ModelRequest): AsyncIterable<ModelStreamPart>;
  /** Every request made so far, in call order, unexpected calls included. */
  readonly calls: readonly RecordedModelRequest[];
  /** How many scripted responses no call has used yet. */
  remaining(): number;
  /** Throws a `CairnError` with code `'invalid_options'` that lists the responses no call used. */
  assertAllUsed(): void;
}

/**
 * The scripted model: a strict test double that answers each call with the
 * next response of a script, records what it was asked, and can assert that
 * the whole script was used. Tests drive the engine with it, without I/O.
 */
import { frozenJsonCopy, toJson } from '../agent/json.js';
import { CairnError, InvalidOptionsError, ModelCallError } from '../errors/index.js';
import type { FinishReason, ModelRequest, ModelResponse, ModelStreamPart, ModelToolCall, ReasoningPart, Usage } from '../models/types.js';
import type { MockLanguageModel, MockModelOptions, MockResponse, MockStatusError, MockTurn, RecordedModelRequest } from './mock-types.js';

export type * from './mock-types.js';

const FINISH_REASONS: readonly FinishReason[] = ['stop', 'tool-calls', 'length', 'content-filter', 'refusal', 'error', 'other'];
const DEFAULT_CHUNK_LENGTH = 8;

/**
 * Creates a strict scripted model. Each `doGenerate` or `doStream` call uses the next response;
 * the script position is shared by every call to the returned object.
 *
 * @example
 * ```ts
 * const model = createMockModel({
 *   responses: [
 *     { toolCalls: [{ toolName: 'weather', args: { city: 'Oslo' } }] },
 *     { text: 'It is sunny in Oslo.' },
 *   ],
 * });
 * // ... run the agent with `model` ...
 * model.assertAllUsed();
 * ```
 */
export function createMockModel(options: MockModelOptions): MockLanguageModel {
  const script = checkOptions(options);
  const { modelId, strict, generateToolCallId } = script;
  const responses = [...script.responses];
  const calls: RecordedModelRequest[] = [];
  let cursor = 0;
  let previous: Conversation | null = null;

  /** Records the call and claims its response, synchronously, so call order decides the answer. */
  function claim(request: ModelRequest): Claim {
    const callNumber = calls.length + 1;
    const conversation = readConversation(request.messages, previous);
    previous = conversation;
    calls.push(recordRequest(request, conversation));
    const inputChars = conversation.chars;
    if (cursor < responses.length) return { callNumber, responseNumber: cursor + 1, entry: responses[cursor++], inputChars };
    if (!strict) return { callNumber, responseNumber: responses.length, entry: responses[responses.length - 1], inputChars };
    return { callNumber, responseNumber: 0, entry: undefined, inputChars };
  }

  async function answer(request: ModelRequest, claimed: Claim): Promise<Answer> {
    if (claimed.entry === undefined) {
      throw new CairnError(
        'mock_model_unexpected_call',
        `Mock model "${modelId}": unexpected call #${claimed.callNumber}; the script has ${responses.length} response(s) and all were used.`,
        { fault: 'user' },
      );
    }
    let turn: MockTurn;
    if (typeof claimed.entry === 'function') {
      turn = await claimed.entry(request);
      checkTurn(turn, `response #${claimed.responseNumber} (computed)`);
    } else {
      turn = claimed.entry;
    }
    await wait(turn.delayMs ?? 0, request.signal);
    if (turn.error !== undefined) throw toThrowable(turn.error, modelId);

    const text = turn.text ?? turn.chunks?.join('') ?? '';
    const toolCalls: ModelToolCall[] = (turn.toolCalls ?? []).map((call, index) => ({
      toolCallId: call.toolCallId ?? generateToolCallId(claimed.callNumber - 1, index),
      toolName: call.toolName,
      args: call.args === undefined ? {} : toJson(call.args) }));
    const response: ModelResponse = {
      text,
      toolCalls,
      finishReason: turn.finishReason ?? (toolCalls.length > 0 ? 'tool-calls' : 'stop'),
      usage: usageFor(claimed.inputChars, text, toolCalls, turn.usage),
      ...(turn.reasoning ? { reasoning: toJson<ReasoningPart[]>(turn.reasoning) } : {}) };
    return { response, chunks: turn.chunks ? [...turn.chunks] : splitText(text), streamError: turn.streamError };
  }

  return {
    specificationVersion: 'cairn-model-1',
    provider: 'mock',
    modelId,
    calls,

    async doGenerate(request) {
      const { response, streamError } = await answer(request, claim(request));
      // A turn scripted to break mid-stream failed; a generate call must not hide that as a success.
      if (streamError) throw toThrowable(streamError.error, modelId);
      return response;
    },

    doStream(request) {
      const claimed = claim(request);
      return (async function* stream(): AsyncGenerator<ModelStreamPart> {
        const { response, chunks, streamError } = await answer(request, claimed);
        let sent = 0;
        for (const reasoning of response.reasoning ?? []) {
          throwIfAborted(request.signal);
          yield { type: 'reasoning-delta', delta: reasoning.text };
          yield { type: 'reasoning', reasoning };
        }
        for (const delta of chunks) {
          if (streamError && sent >= streamError.afterChunks) break;
          throwIfAborted(request.signal);
          yield { type: 'text-delta', delta };
          sent += 1;
        }
        if (streamError) throw toThrowable(streamError.error, modelId);
        for (const toolCall of response.toolCalls) {
          throwIfAborted(request.signal);
          yield { type: 'tool-call', toolCall };
        }
        throwIfAborted(request.signal);
        yield { type: 'finish', finishReason: response.finishReason, usage: response.usage };
      })();
    },

    remaining() {
      return responses.length - cursor;
    },

    assertAllUsed() {
      if (cursor >= responses.length) return;
      const unused = responses.slice(cursor).map((entry, offset) => `#${cursor + offset + 1} ${describe(entry)}`);
      throw new CairnError(
        'invalid_options',
        `Mock model "${modelId}": ${unused.length} scripted response(s) were never used: ${unused.join('; ')}.`,
        { fault: 'user' },
      );
    } };
}

interface Claim {
  callNumber: number;
  /** One-based position of the claimed response in the script; 0 when there is none. */
  responseNumber: number;
  entry: MockResponse | undefined;
  /** The characters of the request's messages, as JSON: the input the usage estimate counts. */
  inputChars: number;
}

interface Answer {
  response: ModelResponse;
  chunks: string[];
  streamError: MockTurn['streamError'];
}

function checkOptions(options: MockModelOptions): Required<MockModelOptions> {
  if (options === null || typeof options !== 'object' || !Array.isArray(options.responses)) {
    throw new InvalidOptionsError('createMockModel: `responses` must be an array.');
  }
  const strict = options.strict ?? true;
  if (!strict && options.responses.length === 0) {
    // A non-strict mock repeats its last response; with none there is nothing to repeat.
    throw new InvalidOptionsError('createMockModel: a non-strict mock needs at least one response.');
  }
  options.responses.forEach((entry, index) => {
    if (typeof entry === 'function') return;
    checkTurn(entry, `response #${index + 1}`);
  });
  if (options.modelId !== undefined && (typeof options.modelId !== 'string' || options.modelId === '')) {
    throw new InvalidOptionsError('createMockModel: `modelId` must be a non-empty string.');
  }
  return {
    responses: options.responses,
    modelId: options.modelId ?? 'mock-model',
    strict,
    generateToolCallId: options.generateToolCallId ?? ((_stepIndex, callIndex) => `tool_${callIndex}`) };
}

/** Every field a scripted turn may have: any other is a typo. */
const TURN_KEYS: ReadonlySet<string> = new Set<keyof MockTurn>([
  'text', 'toolCalls', 'finishReason', 'usage', 'error', 'chunks', 'reasoning', 'delayMs', 'streamError',
]);

/** Catches script mistakes where they are written, not as a puzzling failure deep in a run. */
function checkTurn(turn: unknown, where: string): asserts turn is MockTurn {
  const fail = (problem: string): never => {
    throw new InvalidOptionsError(`createMockModel: ${where} ${problem}.`);
  };
  if (turn === null || typeof turn !== 'object' || Array.isArray(turn)) fail('must be an object or a function');
  const unknown = Object.keys(turn as object).filter((key) => !TURN_KEYS.has(key));
  if (unknown.length > 0) {
    fail(`has ${unknown.length === 1 ? 'an unknown field' : 'unknown fields'} ${unknown.map((k) => `\`${k}\``).join(', ')} (a turn takes ${[...TURN_KEYS].join(', ')})`);
  }
  const t = turn as MockTurn;
  if (t.text !== undefined && typeof t.text !== 'string') fail('has a `text` that is not a string');
  if (t.chunks !== undefined) {
    if (!Array.isArray(t.chunks) || t.chunks.some((c) => typeof c !== 'string')) fail('has `chunks` that are not strings');
    if (t.text !== undefined && t.chunks.join('') !== t.text) fail('has `chunks` that do not join to its `text`');
  }
  if (t.toolCalls !== undefined) {
    if (!Array.isArray(t.toolCalls)) fail('has `toolCalls` that is not an array');
    for (const call of t.toolCalls) {
      if (call === null || typeof call !== 'object' || typeof call.toolName !== 'string' || call.toolName === '') {
        fail('has a tool call without a `toolName`');
      }
      if (call.toolCallId !== undefined && typeof call.toolCallId !== 'string') fail('has a `toolCallId` that is not a string');
    }
  }
  if (t.finishReason !== undefined && !FINISH_REASONS.includes(t.finishReason)) {
    fail(`has an unknown finishReason ${JSON.stringify(t.finishReason)}`);
  }
  if (t.reasoning !== undefined && (!Array.isArray(t.reasoning) || t.reasoning.some((r) => r === null || typeof r !== 'object' || r.type !== 'reasoning' || typeof r.text !== 'string'))) {
    fail("has `reasoning` that is not an array of { type: 'reasoning', text } parts");
  }
  if (t.delayMs !== undefined && !(typeof t.delayMs === 'number' && Number.isFinite(t.delayMs) && t.delayMs >= 0)) {
    fail('has a `delayMs` that is not a non-negative number');
  }
  if (t.streamError !== undefined) {
    const after = t.streamError?.afterChunks;
    if (!(typeof after === 'number' && Number.isInteger(after) && after >= 0)) {
      fail('has a `streamError.afterChunks` that is not a non-negative integer');
    }
  }
}

/**
 * The messages of the last request, their frozen copies and the length of
 * their JSON: the next request of the same conversation repeats them (the
 * engine sends its history again each turn, with the new messages appended).
 * `copies` only grows, and is shared by every recorded request of the
 * conversation: each reads its first `length` entries.
 */
interface Conversation {
  source: readonly unknown[];
  copies: unknown[];
  length: number;
  chars: number;
}

/**
 * The copies and JSON length of `messages`, reusing what `previous` had for
 * the messages both share from the start (by identity). Only the new messages
 * are copied and measured, so a long conversation costs each call what it
 * added, not its whole history (a shared message is an unchanged one: its
 * frozen copy was already made once per object). A request that does not
 * extend the last one (a rewritten history) starts a conversation of its own.
 */
function readConversation(messages: readonly unknown[], previous: Conversation | null): Conversation {
  let same = 0;
  if (previous) {
    const before = previous.source;
    const limit = Math.min(messages.length, before.length);
    while (same < limit && messages[same] === before[same]) same++;
  }
  const extends_ = previous !== null && same === previous.length && previous.copies.length === previous.length;
  const copies = extends_ ? previous.copies : previous ? previous.copies.slice(0, same) : [];
  let chars = extends_ ? previous.chars : 0;
  if (!extends_) for (let i = 0; i < same; i++) chars += jsonLength(copies[i]);
  for (let i = same; i < messages.length; i++) {
    const copy = frozenJsonCopy(messages[i]);
    copies.push(copy);
    chars += jsonLength(copy);
  }
  // A copy of the caller's array: the next request is compared with what this one held, even if that array changes.
  return { source: messages.slice(), copies, length: messages.length, chars };
}

/**
 * The request as recorded. Its `messages` are made from the conversation's
 * shared copies when first read, so a script of N calls keeps O(N) messages
 * rather than N histories.
 */
function recordRequest(request: ModelRequest, conversation: Conversation): RecordedModelRequest {
  // (The signal, undefined here, is dropped by the copy.)
  const recorded = toJson<RecordedModelRequest>({ ...request, signal: undefined, messages: [] });
  const { copies, length } = conversation;
  let messages: RecordedModelRequest['messages'] | undefined;
  Object.defineProperty(recorded, 'messages', {
    enumerable: true,
    configurable: true,
    get: () => (messages ??= copies.slice(0, length) as RecordedModelRequest['messages']),
    set: (value: RecordedModelRequest['messages']) => {
      messages = value;
    } });
  return recorded;
}

/** Status codes a provider call may succeed on when tried again. */
function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

function isStatusError(value: unknown): value is MockStatusError {
  if (value === null || typeof value !== 'object' || value instanceof Error) return false;
  const proto = Object.getPrototypeOf(value);
  return (proto === Object.prototype || proto === null) && typeof (value as { status?: unknown }).status === 'number';
}

function toThrowable(error: unknown, modelId: string): unknown {
  if (!isStatusError(error)) return error;
  // A fresh error each time: a repeated (non-strict) turn must not rethrow one shared instance.
  const thrown = new ModelCallError(error.message ?? `Mock model "${modelId}": scripted failure with status ${error.status}.`, {
    statusCode: error.status,
    isRetryable: isRetryableStatus(error.status) });
  return error.retryAfterMs === undefined ? thrown : Object.assign(thrown, { retryAfterMs: error.retryAfterMs });
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The operation was aborted.', 'AbortError');
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortReason(signal);
}

/** Waits `ms`, rejecting with the signal's reason as soon as it aborts (at once if it already has). */
function wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
  throwIfAborted(signal);
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Splits by code points, so a surrogate pair (an emoji) never lands in two deltas. */
function splitText(text: string): string[] {
  if (text === '') return [];
  const points = Array.from(text);
  const pieces: string[] = [];
  for (let i = 0; i < points.length; i += DEFAULT_CHUNK_LENGTH) {
    pieces.push(points.slice(i, i + DEFAULT_CHUNK_LENGTH).join(''));
  }
  return pieces;
}

const estimateTokens = (chars: number): number => Math.ceil(chars / 4);

const lengths = new WeakMap<object, number>();

/** The length of a message's JSON, measured once per frozen copy (a frozen copy cannot change). */
function jsonLength(message: unknown): number {
  const copy = frozenJsonCopy(message);
  if (copy === null || typeof copy !== 'object') return JSON.stringify(copy).length;
  let length = lengths.get(copy);
  if (length === undefined) {
    length = JSON.stringify(copy).length;
    lengths.set(copy, length);
  }
  return length;
}

/** A deterministic stand-in for a provider's count, so usage totals in tests are stable. */
function usageFor(inputChars: number, text: string, toolCalls: ModelToolCall[], given: Partial<Usage> | undefined): Usage {
  // Name and arguments only: the id does not change what a provider would bill.
  const outputChars = toolCalls.reduce(
    (sum, call) => sum + JSON.stringify({ toolName: call.toolName, args: call.args }).length,
    text.length,
  );
  const inputTokens = given?.inputTokens ?? estimateTokens(inputChars);
  const outputTokens = given?.outputTokens ?? estimateTokens(outputChars);
  return { inputTokens, outputTokens, totalTokens: given?.totalTokens ?? inputTokens + outputTokens };
}

function describe(entry: MockResponse): string {
  if (typeof entry === 'function') return '(computed from the request)';
  const parts: string[] = [];
  if (entry.error !== undefined) parts.push('error');
  if (entry.toolCalls?.length) parts.push(`tool calls ${entry.toolCalls.map((c) => c.toolName).join(', ')}`);
  const text = entry.text ?? entry.chunks?.join('');
  if (text) parts.push(`text ${JSON.stringify(text.length > 30 ? `${text.slice(0, 30)}…` : text)}`);
  return parts.length > 0 ? `(${parts.join(', ')})` : '(empty turn)';
}

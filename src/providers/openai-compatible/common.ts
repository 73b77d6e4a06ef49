/**
 * What the two OpenAI wires (Chat Completions and Responses) share: reading
 * their JSON loosely, their error bodies, the text of tool arguments and
 * results, data URLs, and the errors a stream can end with.
 */
import type { JsonValue } from '../../agent/json.js';
import { APICallError } from '../../errors/index.js';
import type { ModelStreamPart, ProviderOptions, ToolContent, Usage } from '../../models/types.js';
import { isToolContent } from '../../models/types.js';

export type Wire = Record<string, unknown>;

export const obj = (value: unknown): Wire | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Wire) : undefined;
export const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
export const num = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);
export const arr = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** `baseURL` and a path, with exactly one slash between them (a base with a path of its own keeps it). */
export function joinUrl(baseURL: string, path: string): string {
  return `${baseURL.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}

/**
 * The message of an error body: OpenAI's `{ error: { message } }`, and the
 * shapes compatible servers use (`{ error: '...' }` from Ollama, `{ message }`).
 */
export function errorMessageOf(body: unknown): string | undefined {
  const b = obj(body);
  if (!b) return undefined;
  const error = b.error;
  return str(obj(error)?.message) ?? str(error) ?? str(b.message) ?? str(b.detail);
}

/** A call's arguments as the wire carries them: JSON text (arguments that were not JSON went through as their text). */
export function argsText(args: JsonValue): string {
  return typeof args === 'string' ? args : JSON.stringify(args);
}

/** A tool result as text: a string as it is, parts as their joined text, any other JSON as JSON text. */
export function toolResultText(content: JsonValue): string {
  if (typeof content === 'string') return content;
  if (isToolContent(content)) return content.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n');
  return JSON.stringify(content);
}

export function asToolContent(content: JsonValue): ToolContent | undefined {
  return isToolContent(content) ? content : undefined;
}

export function dataUrl(data: string, mediaType: string | undefined): string {
  return `data:${mediaType ?? 'application/octet-stream'};base64,${data}`;
}

/** This provider's entry of the run's providerOptions, merged into the body last. */
export function ownOptions(options: ProviderOptions | undefined, key: string): Record<string, JsonValue> {
  return obj(options?.[key]) as Record<string, JsonValue> | undefined ?? {};
}

/** Usage with the three optional counts only when the provider reported them. */
export function usageOf(input: number, output: number, total: number | undefined, extra: { cacheRead?: number; reasoning?: number }): Usage {
  return {
    inputTokens: input,
    outputTokens: output,
    totalTokens: total ?? input + output,
    ...(extra.cacheRead !== undefined ? { cacheReadTokens: extra.cacheRead } : {}),
    ...(extra.reasoning !== undefined ? { reasoningTokens: extra.reasoning } : {}),
  };
}

/**
 * The HTTP status an error inside a 200 answer (a stream's error event, a
 * failed response) stands for, from its `code` or `type`, so retries and
 * fail-over treat it like the same error sent as a status. An error the wire
 * does not classify is taken as the server's (500).
 */
function statusOfAnswerError(code: string): { status: number; retryable: boolean } {
  const c = code.toLowerCase();
  if (c.includes('quota')) return { status: 429, retryable: false };
  if (c.includes('rate_limit')) return { status: 429, retryable: true };
  if (c.includes('overloaded_error')) return { status: 529, retryable: true };
  if (c.includes('overloaded') || c.includes('unavailable')) return { status: 503, retryable: true };
  if (c.includes('invalid') || c.includes('context_length') || c.includes('not_found') || c.includes('unsupported')) {
    return { status: c.includes('not_found') ? 404 : 400, retryable: false };
  }
  return { status: 500, retryable: true };
}

export function answerError(provider: string, url: string, error: Wire | undefined): APICallError {
  const code = str(error?.code) ?? str(error?.type) ?? '';
  const { status, retryable } = statusOfAnswerError(code);
  return new APICallError({
    message: `${provider} reported an error in its answer${code ? ` (${code})` : ''}: ${str(error?.message) ?? 'no message'}`,
    provider, url, statusCode: status, isRetryable: retryable,
    ...(error ? { responseBody: JSON.stringify(error) } : {}),
  });
}

/** A body that ended cleanly before the wire's closing event: the answer is incomplete, and another attempt may get all of it. */
export function streamEndedEarly(provider: string, url: string): APICallError {
  return new APICallError({
    message: `The stream of ${provider} ended early, before its final event.`,
    provider, url, isRetryable: true,
  });
}

const HEAD_TYPES = new Set<ModelStreamPart['type']>(['response-metadata', 'warnings']);

/**
 * Holds the parts that carry no content (response metadata, warnings) until
 * the first other part, so a stream that fails before any content throws with
 * nothing yielded: the engine then sees a failed call, which may fail over,
 * and not a stream that broke off.
 */
export async function* holdHead(parts: AsyncIterable<ModelStreamPart>): AsyncGenerator<ModelStreamPart> {
  const held: ModelStreamPart[] = [];
  let open = true;
  for await (const part of parts) {
    if (open && HEAD_TYPES.has(part.type)) {
      held.push(part);
      continue;
    }
    if (open) {
      open = false;
      yield* held;
    }
    yield part;
  }
  if (open) yield* held;
}

/**
 * What a tool returned, on its way to the receipt and to the model: a result
 * that cannot be stored is not a failure (the tool ran), and one result never
 * floods the model's history.
 */
import { serializeError, ToolResultError, type SerializedError } from '../errors/index.js';
import type { JsonValue } from '../agent/json.js';
import { jsonWithin, OVER_LIMIT } from './bounded-json.js';

export type StoredOutcome =
  | { kind: 'result'; value: JsonValue }
  | { kind: 'unstorable'; error: SerializedError };

const firstLine = (text: string) => text.split('\n')[0]!.trim().replace(/\.$/, '');

/**
 * The raw result as plain JSON, or why it cannot be stored: it is not JSON (a
 * cycle, a BigInt, a function, a toJSON or getter that throws) or its JSON is
 * over `maxBytes`. `undefined` is stored as null, as before.
 *
 * The size is checked as the JSON is written (see bounded-json.ts): a result
 * over the limit is refused before any copy of it is made, so a run holds
 * only what the tool returned, and a stored result's copy is at most
 * `maxBytes` of JSON.
 */
export function storableResult(value: unknown, maxBytes: number, toolCallId: string): StoredOutcome {
  if (value === undefined) return { kind: 'result', value: null };
  const unstorable = (code: 'result_too_large' | 'result_unstorable', message: string): StoredOutcome =>
    ({ kind: 'unstorable', error: serializeError(new ToolResultError(code, message, toolCallId)) });
  let text: ReturnType<typeof jsonWithin>;
  try {
    text = jsonWithin(value, maxBytes);
  } catch (error) {
    return unstorable('result_unstorable', `it is not JSON (${firstLine(serializeError(error).message)})`);
  }
  if (text === OVER_LIMIT) {
    return unstorable('result_too_large', `its JSON is over the receipt's limit of ${maxBytes} bytes (maxReceiptBytes)`);
  }
  if (text === undefined) return unstorable('result_unstorable', `it is not JSON (a ${typeof value})`);
  return { kind: 'result', value: JSON.parse(text) as JsonValue };
}

/** What the model is told about a call whose result could not be stored. */
export function unstorableMessage(error: SerializedError | undefined): string {
  const reason = error?.message ?? 'it could not be kept';
  return `The tool ran, but its result could not be stored: ${reason}. Do not call it again for the same purpose.`;
}

/**
 * At most `maxChars` of a result's text for the model's history (a string as
 * it is, any other value as JSON), cut with a marker that says so. Under the
 * cap the value is unchanged.
 */
export function capForModel(output: JsonValue | string, maxChars: number): JsonValue | string {
  const text = typeof output === 'string' ? output : JSON.stringify(output);
  if (text === undefined || text.length <= maxChars) return output;
  let end = maxChars;
  // Never cut a surrogate pair in two.
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}\n[truncated: the result is ${text.length} characters; only the first ${end} are shown (maxToolResultChars)]`;
}

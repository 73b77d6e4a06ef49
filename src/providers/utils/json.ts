/** Parsing what providers send as JSON text: tool-call arguments and stream events. */
import type { JsonValue } from '../../agent/json.js';
import { invalidResponse } from './http.js';

/**
 * A call's arguments from their JSON text. Empty text is `{}`; text that is not
 * JSON is kept as the string itself, so the run can answer the model that its
 * arguments were invalid instead of failing.
 */
export function parseToolArgs(text: string): JsonValue {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return text;
  }
}

/** JSON of one stream event, or undefined when it is not JSON. */
export function parseEvent(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}

/**
 * The JSON object one stream event carries. An event with no data (a
 * keep-alive) is undefined; data that is not a JSON object is a broken
 * answer: an `invalid_response` error, which no retry cures.
 */
export function eventJson(data: string, provider: string, url: string): Record<string, unknown> | undefined {
  if (data.trim() === '') return undefined;
  const value = parseEvent(data);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidResponse(provider, url, 'a stream event that is not a JSON object', data);
  }
  return value as Record<string, unknown>;
}

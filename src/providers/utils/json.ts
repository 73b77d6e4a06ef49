/** Parsing what providers send as JSON text: tool-call arguments and stream events. */
import type { JsonValue } from '../../agent/json.js';

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

/**
 * Validation through a user's validator or a Standard Schema value. Raw JSON
 * Schema is only a description for the model: it needs a validator beside it.
 */
import type { StandardSchemaV1 } from './types.js';

export function isStandardSchema(value: unknown): value is StandardSchemaV1<unknown> {
  return typeof value === 'object' && value !== null && '~standard' in value &&
    typeof (value as StandardSchemaV1)['~standard']?.validate === 'function';
}

export type Checked = { ok: true; value: unknown } | { ok: false; issue: string };

/** Runs `validate` if given, else the Standard Schema's own validator, else accepts the value as it is. */
export async function check(value: unknown, schema: unknown, validate: ((v: unknown) => unknown) | undefined): Promise<Checked> {
  try {
    if (validate) return { ok: true, value: await validate(value) };
    if (isStandardSchema(schema)) {
      const result = await schema['~standard'].validate(value);
      if (result.issues) return { ok: false, issue: result.issues.map((i) => i.message).join('; ') || 'Invalid value.' };
      return { ok: true, value: result.value };
    }
    return { ok: true, value };
  } catch (error) {
    return { ok: false, issue: error instanceof Error ? error.message : String(error) };
  }
}

/** A JSON Schema to send to the model: a Standard Schema value sends none unless it carries a `jsonSchema`. */
export function wireSchema(schema: unknown): unknown {
  if (isStandardSchema(schema)) {
    const carried = (schema as { jsonSchema?: unknown }).jsonSchema;
    return carried ?? { type: 'object' };
  }
  return schema;
}

/** Parses the JSON answer of a finalization turn, allowing a ```json fence around it. */
export function parseJsonAnswer(text: string): Checked {
  const trimmed = text.trim();
  const fenced = /^```(?:json)?\s*([\s\S]*?)\s*```$/i.exec(trimmed);
  const body = fenced ? fenced[1]! : trimmed;
  try {
    return { ok: true, value: JSON.parse(body) };
  } catch {
    return { ok: false, issue: 'The answer is not valid JSON.' };
  }
}

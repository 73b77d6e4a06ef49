/**
 * A tool's `schema`: any Standard Schema v1 validator (zod 3 and 4, valibot,
 * arktype, ...). It is checked once, when the tool is defined, and gives two
 * things:
 *
 * - the JSON Schema the model reads: the tool's own `jsonSchema` when given,
 *   else the validator's converter (Standard JSON Schema, as zod 4 offers it,
 *   or a `toJSONSchema()` method), else, for zod 3, which has none, Cairn's
 *   small converter (zod3-json-schema.ts). A validator with none of these is
 *   refused: the model must be told what to send.
 * - the check of every call's arguments, by the validator itself. The value
 *   it produced (defaults filled in, transforms applied) is kept for the
 *   call's `execute`, so a call is validated once, not twice.
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import { ToolDefinitionError } from './errors.js';
import { isZod3Schema, zod3ToJsonSchema, Zod3ConversionError } from './zod3-json-schema.js';

type Validation = StandardSchemaV1.Result<unknown>;

export interface CheckedSchema {
  /** What the engine gets as the tool's `parameters`: a Standard Schema value carrying its JSON Schema. */
  parameters: StandardSchemaV1 & { jsonSchema: Record<string, unknown> };
  /** The validator's own check. */
  validate(value: unknown): Validation | Promise<Validation>;
  /** The value the engine's check produced for these very arguments, when it is still at hand. */
  parsed(args: unknown): { found: true; value: unknown } | { found: false };
}

const plainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function isValidator(value: unknown): value is StandardSchemaV1 {
  const standard = (value as { '~standard'?: { version?: unknown; validate?: unknown } } | null)?.['~standard'];
  return typeof value === 'object' && value !== null && typeof standard === 'object' && standard !== null &&
    standard.version === 1 && typeof standard.validate === 'function';
}

/** The JSON Schema a validator offers of itself, or undefined when it offers none. */
function ownConversion(schema: StandardSchemaV1): unknown {
  const standard = schema['~standard'] as { jsonSchema?: { input?: (options: { target: string }) => unknown } };
  if (typeof standard.jsonSchema?.input === 'function') return standard.jsonSchema.input({ target: 'draft-2020-12' });
  const method = (schema as { toJSONSchema?: () => unknown }).toJSONSchema;
  if (typeof method === 'function') return method.call(schema);
  return undefined;
}

function wireSchemaOf(name: string, schema: StandardSchemaV1, given: unknown): Record<string, unknown> {
  const refuse = (message: string, cause?: unknown): never => {
    throw new ToolDefinitionError('tool_definition_invalid', `tool "${name}": ${message}`, name, cause);
  };
  let converted: unknown = given;
  if (converted === undefined) {
    try {
      converted = ownConversion(schema);
      if (converted === undefined && isZod3Schema(schema)) converted = zod3ToJsonSchema(schema);
    } catch (error) {
      if (error instanceof Zod3ConversionError) {
        refuse(`${error.message}; pass the JSON Schema of its arguments as jsonSchema (zod 4 converts every type itself).`, error);
      }
      refuse(`its ${schema['~standard'].vendor} schema could not be converted to JSON Schema: ${(error as Error).message}`, error);
    }
  }
  if (converted === undefined) {
    refuse(
      `its schema (${schema['~standard'].vendor}) offers no JSON Schema conversion, and the model needs one; ` +
      'pass jsonSchema, or use a validator that converts itself (Standard JSON Schema, as zod 4 has).',
    );
  }
  if (!plainObject(converted)) return refuse(given !== undefined ? 'jsonSchema must be a JSON Schema object.' : 'its schema converted to something that is not a JSON Schema object.');
  if (converted.type !== 'object') {
    refuse(`its arguments must be an object: the schema describes type ${JSON.stringify(converted.type ?? null)}; use an object schema (z.object({...})).`);
  }
  try {
    return JSON.parse(JSON.stringify(converted)) as Record<string, unknown>;
  } catch (error) {
    return refuse('its JSON Schema is not plain JSON.', error);
  }
}

/** Checks a tool's schema once, at definition; throws ToolDefinitionError for one that is not a validator or cannot be described. */
export function toolSchemaOf(name: string, schema: unknown, jsonSchema: unknown): CheckedSchema {
  if (!isValidator(schema)) {
    const what = schema === undefined ? 'missing' : plainObject(schema) && 'type' in schema ? 'a plain JSON Schema' : typeof schema;
    throw new ToolDefinitionError(
      'tool_definition_invalid',
      `tool "${name}": schema must be a validator (zod 3 or 4, or any Standard Schema v1 value), got ${what}. ` +
      'A plain JSON Schema describes but does not check: wrap it in a validator, or give the validator and pass the JSON Schema as jsonSchema.',
      name,
    );
  }
  const wire = wireSchemaOf(name, schema, jsonSchema);
  const own = schema['~standard'];
  // Results by argument object: the engine checks a call's arguments and then hands that same object to execute.
  const results = new WeakMap<object, unknown>();
  const keep = (value: unknown, result: Validation): Validation => {
    if (!result.issues && typeof value === 'object' && value !== null) results.set(value, result.value);
    return result;
  };
  const validate = (value: unknown): Validation | Promise<Validation> => {
    const result = own.validate(value);
    return result instanceof Promise ? result.then((r) => keep(value, r)) : keep(value, result);
  };
  const parameters = {
    '~standard': { version: 1 as const, vendor: own.vendor, validate },
    jsonSchema: wire,
  };
  return {
    parameters,
    validate,
    parsed(args) {
      if (typeof args !== 'object' || args === null || !results.has(args)) return { found: false };
      return { found: true, value: results.get(args) };
    },
  };
}

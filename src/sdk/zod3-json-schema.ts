/**
 * zod 3 has no JSON Schema converter of its own (zod 4 does), so `tool()`
 * carries a small one for the types tool arguments are usually made of. It
 * reads the schema's public `_def` description and never imports zod: a
 * project without zod loads none of it.
 *
 * Covered: object (with `.strict()`), string (min/max/length, email, url,
 * uuid, regex), number (int, min/max, exclusive bounds), boolean, null,
 * literal, enum, native enum, array (min/max), tuple, union and
 * discriminated union, record, optional, nullable, default, describe(), and
 * effects (refine, transform, preprocess: the input side), lazy is not.
 * Anything else is refused, naming the type, so the tool can pass its own
 * `jsonSchema` instead of sending the model a schema that says less than the
 * validator checks.
 */

type Def = { typeName?: unknown; [key: string]: unknown };
type Zod3 = { _def: Def; description?: string };
type Json = { [key: string]: unknown };

/** Thrown (and turned into a ToolDefinitionError by the caller) for a zod 3 type this converter does not cover. */
export class Zod3ConversionError extends Error {
  constructor(readonly typeName: string, readonly path: string) {
    super(`the zod 3 type ${typeName} at ${path || '(root)'} has no JSON Schema conversion`);
  }
}

/** True for a zod 3 schema: a `_def` with a string `typeName` (zod 4's `_def` names its kind `type`). */
export function isZod3Schema(value: unknown): value is Zod3 {
  const def = (value as { _def?: Def } | null)?._def;
  return typeof def === 'object' && def !== null && typeof def.typeName === 'string';
}

const isOptional = (schema: Zod3): boolean => {
  const name = schema._def.typeName;
  if (name === 'ZodOptional' || name === 'ZodDefault') return true;
  if (name === 'ZodEffects') return isOptional(schema._def.schema as Zod3);
  return false;
};

function withDescription(schema: Zod3, json: Json): Json {
  const description = schema._def.description ?? schema.description;
  return typeof description === 'string' ? { ...json, description } : json;
}

function stringSchema(def: Def): Json {
  const out: Json = { type: 'string' };
  for (const check of (def.checks as { kind: string; value?: unknown; regex?: RegExp }[] | undefined) ?? []) {
    if (check.kind === 'min') out.minLength = check.value;
    else if (check.kind === 'max') out.maxLength = check.value;
    else if (check.kind === 'length') out.minLength = out.maxLength = check.value;
    else if (check.kind === 'email') out.format = 'email';
    else if (check.kind === 'url') out.format = 'uri';
    else if (check.kind === 'uuid') out.format = 'uuid';
    else if (check.kind === 'datetime') out.format = 'date-time';
    else if (check.kind === 'regex' && check.regex) out.pattern = check.regex.source;
  }
  return out;
}

function numberSchema(def: Def): Json {
  const out: Json = { type: 'number' };
  for (const check of (def.checks as { kind: string; value?: number; inclusive?: boolean }[] | undefined) ?? []) {
    if (check.kind === 'int') out.type = 'integer';
    else if (check.kind === 'min') out[check.inclusive === false ? 'exclusiveMinimum' : 'minimum'] = check.value;
    else if (check.kind === 'max') out[check.inclusive === false ? 'exclusiveMaximum' : 'maximum'] = check.value;
    else if (check.kind === 'multipleOf') out.multipleOf = check.value;
  }
  return out;
}

function convert(schema: Zod3, path: string): Json {
  const def = schema._def;
  const name = String(def.typeName);
  const inner = (child: unknown, at: string) => convert(child as Zod3, at);
  switch (name) {
    case 'ZodObject': {
      const shape = (typeof def.shape === 'function' ? (def.shape as () => Record<string, Zod3>)() : def.shape) as Record<string, Zod3>;
      const properties: Json = {};
      const required: string[] = [];
      for (const [key, child] of Object.entries(shape)) {
        properties[key] = inner(child, `${path}/${key}`);
        if (!isOptional(child)) required.push(key);
      }
      const out: Json = { type: 'object', properties };
      if (required.length > 0) out.required = required;
      if (def.unknownKeys === 'strict') out.additionalProperties = false;
      return withDescription(schema, out);
    }
    case 'ZodString': return withDescription(schema, stringSchema(def));
    case 'ZodNumber': return withDescription(schema, numberSchema(def));
    case 'ZodBoolean': return withDescription(schema, { type: 'boolean' });
    case 'ZodNull': return withDescription(schema, { type: 'null' });
    case 'ZodAny': case 'ZodUnknown': return withDescription(schema, {});
    case 'ZodLiteral': return withDescription(schema, { const: def.value });
    case 'ZodEnum': return withDescription(schema, { type: 'string', enum: [...(def.values as string[])] });
    case 'ZodNativeEnum': {
      const values = def.values as Record<string, string | number>;
      // A numeric enum maps each name to its number and back: keep the values, not the reverse names.
      const kept = Object.entries(values).filter(([key]) => typeof values[values[key] as string] !== 'number').map(([, v]) => v);
      return withDescription(schema, { enum: kept });
    }
    case 'ZodArray': {
      const out: Json = { type: 'array', items: inner(def.type, `${path}/items`) };
      const min = (def.minLength as { value: number } | null)?.value;
      const max = (def.maxLength as { value: number } | null)?.value;
      if (min !== undefined) out.minItems = min;
      if (max !== undefined) out.maxItems = max;
      return withDescription(schema, out);
    }
    case 'ZodTuple': {
      const items = (def.items as Zod3[]).map((item, i) => inner(item, `${path}/${i}`));
      return withDescription(schema, { type: 'array', prefixItems: items, minItems: items.length, ...(def.rest ? {} : { maxItems: items.length }) });
    }
    case 'ZodUnion': return withDescription(schema, { anyOf: (def.options as Zod3[]).map((o, i) => inner(o, `${path}/anyOf/${i}`)) });
    case 'ZodDiscriminatedUnion': {
      const options = def.options as Zod3[] | Map<unknown, Zod3>;
      const list = Array.isArray(options) ? options : [...options.values()];
      return withDescription(schema, { anyOf: list.map((o, i) => inner(o, `${path}/anyOf/${i}`)) });
    }
    case 'ZodRecord': return withDescription(schema, { type: 'object', additionalProperties: inner(def.valueType, `${path}/*`) });
    case 'ZodOptional': return withDescription(schema, inner(def.innerType, path));
    case 'ZodNullable': return withDescription(schema, { anyOf: [inner(def.innerType, path), { type: 'null' }] });
    case 'ZodDefault': {
      const value = (def.defaultValue as () => unknown)();
      return withDescription(schema, { ...inner(def.innerType, path), default: value });
    }
    // The model writes the input: a refinement or transform is checked by the validator, not described.
    case 'ZodEffects': return withDescription(schema, inner(def.schema, path));
    default: throw new Zod3ConversionError(name, path);
  }
}

/** The JSON Schema (draft 2020-12) of a zod 3 schema, or a Zod3ConversionError naming the first type it cannot describe. */
export function zod3ToJsonSchema(schema: unknown): Json {
  return { $schema: 'https://json-schema.org/draft/2020-12/schema', ...convert(schema as Zod3, '') };
}

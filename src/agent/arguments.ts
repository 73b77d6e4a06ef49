/**
 * A tool's `parameters`: checked once when the options are (a valid JSON
 * Schema of an object, or a Standard Schema value that converts itself to one),
 * then used twice: as the JSON Schema the model and the binding see, and to
 * check every call's arguments before approval or effect. JSON Schema is
 * compiled with ajv once per schema (by its JSON); a Standard Schema value
 * checks with its own `validate`.
 */
import { createRequire } from 'node:module';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { InvalidOptionsError } from '../errors/index.js';
import { toJson, type JsonValue } from './json.js';
import { isStandardSchema } from './schema.js';
import type { AgentTool, StandardSchemaV1 } from './types.js';

/** What a call's arguments came to: fine, or the message the model gets. */
export type ArgumentVerdict = { ok: true } | { ok: false; message: string };

export interface ToolParameters {
  /** The JSON Schema sent to the model and fingerprinted in the binding. */
  wire: JsonValue;
  /** Checks one call's arguments. A Standard Schema validator that throws rejects. */
  check(args: JsonValue): ArgumentVerdict | Promise<ArgumentVerdict>;
}

/** How many problems one message lists at most. */
const MAX_ISSUES = 8;
const AJV_OPTIONS = { strict: false, allErrors: true, validateFormats: false, logger: false } as const;

type AnyAjv = Ajv | Ajv2019 | Ajv2020;
const instances = new Map<string, AnyAjv>();

/** One ajv per JSON Schema draft, by the `$schema` a schema declares (none: draft-07). */
function ajvFor(schema: { $schema?: unknown }, own: boolean): AnyAjv {
  const declared = typeof schema.$schema === 'string' ? schema.$schema.replace(/#$/, '') : '';
  let draft: string;
  if (declared === '' || /json-schema\.org\/draft-07\/schema$/.test(declared)) draft = 'draft-07';
  else if (/json-schema\.org\/draft-06\/schema$/.test(declared)) draft = 'draft-06';
  else if (/json-schema\.org\/draft\/2019-09\/schema$/.test(declared)) draft = '2019-09';
  else if (/json-schema\.org\/draft\/2020-12\/schema$/.test(declared)) draft = '2020-12';
  else throw new InvalidOptionsError(`it declares $schema ${JSON.stringify(schema.$schema)}, a draft Cairn cannot check; use draft-07 or 2020-12, or leave $schema out`);
  // A schema with its own $id gets its own instance: two tools may use the same $id.
  const cached = own ? undefined : instances.get(draft);
  if (cached) return cached;
  let ajv: AnyAjv;
  if (draft === '2020-12') ajv = new Ajv2020(AJV_OPTIONS);
  else if (draft === '2019-09') ajv = new Ajv2019(AJV_OPTIONS);
  else {
    ajv = new Ajv(AJV_OPTIONS);
    if (draft === 'draft-06') ajv.addMetaSchema(createRequire(import.meta.url)('ajv/dist/refs/json-schema-draft-06.json'));
  }
  if (!own) instances.set(draft, ajv);
  return ajv;
}

/** `/to`, `/items/0`, or `(root)`: where in the arguments a problem is. */
const where = (path: string) => (path === '' ? '(root)' : path);

function renderAjvError(e: ErrorObject): string {
  const params = e.params as { additionalProperty?: string; allowedValues?: unknown[] };
  let detail = '';
  if (params.additionalProperty !== undefined) detail = ` (${JSON.stringify(params.additionalProperty)})`;
  else if (Array.isArray(params.allowedValues)) detail = `: ${params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  return `${where(e.instancePath)} ${e.message ?? 'is invalid'}${detail}`;
}

function renderIssuePath(path: ReadonlyArray<PropertyKey | { key: PropertyKey }> | undefined): string {
  if (!path || path.length === 0) return '(root)';
  return path.map((p) => `/${String(typeof p === 'object' && p !== null ? p.key : p)}`).join('');
}

function invalid(toolName: string, problems: string[]): ArgumentVerdict {
  const listed = problems.slice(0, MAX_ISSUES);
  const more = problems.length > listed.length ? `; and ${problems.length - listed.length} more` : '';
  return {
    ok: false,
    message: `Invalid arguments for tool "${toolName}": ${listed.join('; ')}${more}. Call it again with arguments that match its parameters schema.`,
  };
}

/** Arguments that are not JSON reach the engine as the text the model sent. */
function notJson(toolName: string, args: JsonValue): ArgumentVerdict | undefined {
  if (typeof args !== 'string') return undefined;
  const excerpt = args.length > 200 ? `${args.slice(0, 200)}...` : args;
  return {
    ok: false,
    message: `Invalid arguments for tool "${toolName}": they are not valid JSON (${JSON.stringify(excerpt)}). Call it again with a JSON object that matches its parameters schema.`,
  };
}

/** The JSON Schema a Standard Schema value converts itself to, or undefined when it offers no conversion. */
function convertStandard(schema: StandardSchemaV1<unknown>): unknown {
  const standard = schema['~standard'] as { jsonSchema?: { input?: (options: { target: string }) => unknown } };
  if (typeof standard.jsonSchema?.input === 'function') return standard.jsonSchema.input({ target: 'draft-2020-12' });
  const method = (schema as { toJSONSchema?: () => unknown }).toJSONSchema;
  if (typeof method === 'function') return method.call(schema);
  const carried = (schema as { jsonSchema?: unknown }).jsonSchema;
  if (carried !== null && typeof carried === 'object') return carried;
  return undefined;
}

const plainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function requireObjectSchema(name: string, schema: unknown, origin: string): Record<string, unknown> {
  if (!plainObject(schema)) {
    throw new InvalidOptionsError(`Tool "${name}": parameters must be a JSON Schema object of type "object"${origin}, got ${schema === null ? 'null' : Array.isArray(schema) ? 'an array' : typeof schema}.`);
  }
  if (schema.type !== 'object') {
    throw new InvalidOptionsError(`Tool "${name}": parameters must be a JSON Schema of type "object" (a call's arguments are an object)${origin}, got type ${JSON.stringify(schema.type ?? null)}.`);
  }
  return schema;
}

/**
 * Validators compiled by the shared instances, by the schema's JSON. Runs whose
 * tools are new objects with the same schemas (a service that builds its
 * tools per request) compile nothing again, and ajv, which keeps every schema
 * object it compiled for as long as the instance lives, keeps one per schema
 * rather than one per run.
 */
const validators = new Map<AnyAjv, Map<string, ValidateFunction>>();

function compile(name: string, schema: Record<string, unknown>, origin: string): ValidateFunction {
  let ajv: AnyAjv;
  const own = typeof schema.$id === 'string';
  try {
    ajv = ajvFor(schema, own);
  } catch (error) {
    throw new InvalidOptionsError(`Tool "${name}": parameters is not a schema Cairn can check${origin}: ${(error as Error).message}.`);
  }
  // A schema with its own $id has an instance of its own, dropped with the tool: nothing to share.
  const byText = own ? undefined : validators.get(ajv) ?? validators.set(ajv, new Map()).get(ajv)!;
  const text = byText ? JSON.stringify(schema) : '';
  const known = byText?.get(text);
  if (known) return known;
  if (!ajv.validateSchema(schema)) {
    // The first problem at each place: the meta-schema's alternatives (anyOf) would repeat it in other words.
    const byPath = new Map<string, ErrorObject>();
    for (const e of ajv.errors ?? []) if (!byPath.has(e.instancePath)) byPath.set(e.instancePath, e);
    const problems = [...byPath.values()].slice(0, MAX_ISSUES).map(renderAjvError);
    throw new InvalidOptionsError(`Tool "${name}": parameters is not a valid JSON Schema${origin}: ${problems.join('; ')}.`);
  }
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    throw new InvalidOptionsError(`Tool "${name}": parameters cannot be compiled${origin}: ${(error as Error).message}.`);
  }
  byText?.set(text, validate);
  return validate;
}

function jsonSchemaParameters(name: string, parameters: unknown): ToolParameters {
  const schema = requireObjectSchema(name, parameters, '');
  let wire: JsonValue;
  try {
    wire = toJson<JsonValue>(schema);
  } catch (error) {
    throw new InvalidOptionsError(`Tool "${name}": parameters must be plain JSON: ${(error as Error).message}.`);
  }
  const validate = compile(name, wire as Record<string, unknown>, '');
  return {
    wire,
    check(args) {
      const text = notJson(name, args);
      if (text) return text;
      if (validate(args)) return { ok: true };
      return invalid(name, (validate.errors ?? []).map(renderAjvError));
    },
  };
}

function standardParameters(name: string, schema: StandardSchemaV1<unknown>): ToolParameters {
  const vendor = schema['~standard'].vendor;
  let converted: unknown;
  try {
    converted = convertStandard(schema);
  } catch (error) {
    throw new InvalidOptionsError(`Tool "${name}": parameters (a ${vendor} schema) could not be converted to JSON Schema: ${(error as Error).message}`);
  }
  if (converted === undefined) {
    throw new InvalidOptionsError(
      `Tool "${name}": parameters is a Standard Schema value (${vendor}) that offers no JSON Schema conversion, and the model needs a JSON Schema. ` +
      'Pass a JSON Schema object, or a schema that converts itself (~standard.jsonSchema, as zod 4 has, or a toJSONSchema() method).',
    );
  }
  const origin = ` (converted from the ${vendor} schema)`;
  const wire = toJson<JsonValue>(requireObjectSchema(name, converted, origin));
  // The converted schema must be one the providers can read; the arguments are checked by the schema itself.
  compile(name, wire as Record<string, unknown>, origin);
  return {
    wire,
    async check(args) {
      const text = notJson(name, args);
      if (text) return text;
      const result = await schema['~standard'].validate(args);
      if (!result.issues) return { ok: true };
      const issues = result.issues as ReadonlyArray<{ message: string; path?: ReadonlyArray<PropertyKey | { key: PropertyKey }> }>;
      return invalid(name, issues.length === 0 ? ['(root) is invalid'] : issues.map((i) => `${renderIssuePath(i.path)} ${i.message}`));
    },
  };
}

const compiled = new WeakMap<AgentTool, { parameters: unknown; result: ToolParameters }>();

/**
 * The checked parameters of a tool, checked once per tool object (a resume
 * that passes the same tools checks nothing again) and compiled once per
 * schema. Refuses with
 * InvalidOptionsError, naming the tool, a schema that is not valid JSON
 * Schema, not of type "object", or a Standard Schema without a conversion.
 */
export function toolParameters(name: string, tool: AgentTool): ToolParameters {
  const hit = compiled.get(tool);
  if (hit && hit.parameters === tool.parameters) return hit.result;
  const parameters: unknown = tool.parameters;
  if (parameters === undefined) {
    throw new InvalidOptionsError(`Tool "${name}": parameters is required: the JSON Schema of its arguments, of type "object".`);
  }
  const result = isStandardSchema(parameters) ? standardParameters(name, parameters) : jsonSchemaParameters(name, parameters);
  compiled.set(tool, { parameters, result });
  return result;
}

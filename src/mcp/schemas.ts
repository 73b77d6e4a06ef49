/**
 * The JSON Schemas of an MCP tool: its inputSchema becomes the tool's
 * parameters (checked and compiled as any tool's are), its outputSchema
 * checks the structuredContent of every result. A schema that is not valid
 * JSON Schema refuses the tool, naming the server and the tool. @internal
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { toolParameters, type ToolParameters } from '../agent/arguments.js';
import { toJson, type JsonValue } from '../agent/json.js';
import { McpError } from './errors.js';

const AJV_OPTIONS = { strict: false, allErrors: true, validateFormats: false, logger: false } as const;
let draft07: Ajv | null = null;
let draft2020: Ajv2020 | null = null;
/** Compiled output checks by the schema's JSON: every leg lists the tools anew, and ajv keeps what it compiled. */
const compiled = new Map<string, ValidateFunction>();

/** The arguments' schema as a tool's parameters; refused as mcp_tool_schema_invalid when it cannot be one. */
export function inputParameters(server: string, tool: string, offered: string, schema: unknown): ToolParameters {
  try {
    return toolParameters(offered, { parameters: toJson<JsonValue>(schema) });
  } catch (error) {
    throw new McpError(
      'mcp_tool_schema_invalid', server,
      `MCP server ${server} offers tool ${tool} with an inputSchema that is not a valid JSON Schema of an object: ${(error as Error).message}`,
      { tool, cause: error },
    );
  }
}

const render = (e: ErrorObject) => `${e.instancePath === '' ? '(root)' : e.instancePath} ${e.message ?? 'is invalid'}`;

/** The check of a result's structuredContent against the outputSchema: undefined when fine, else what is wrong. */
export type OutputCheck = (value: unknown) => string | undefined;

export function outputCheck(server: string, tool: string, schema: unknown): OutputCheck {
  const refuse = (why: string, cause?: unknown) => new McpError(
    'mcp_tool_schema_invalid', server, `MCP server ${server} offers tool ${tool} with an outputSchema that is not a valid JSON Schema: ${why}`,
    { tool, cause },
  );
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) throw refuse('it is not an object');
  const declared = String((schema as { $schema?: unknown }).$schema ?? '');
  const ajv = /2020-12/.test(declared) ? (draft2020 ??= new Ajv2020(AJV_OPTIONS)) : (draft07 ??= new Ajv(AJV_OPTIONS));
  if (!ajv.validateSchema(schema as object)) throw refuse((ajv.errors ?? []).slice(0, 4).map(render).join('; '));
  const own = typeof (schema as { $id?: unknown }).$id === 'string';
  const text = own ? '' : JSON.stringify(schema);
  let validate = own ? undefined : compiled.get(text);
  if (validate) return checkWith(validate);
  try {
    // A schema with its own $id is compiled on a fresh instance: two servers may use one $id.
    validate = own
      ? (/2020-12/.test(declared) ? new Ajv2020(AJV_OPTIONS) : new Ajv(AJV_OPTIONS)).compile(schema as object)
      : ajv.compile(schema as object);
  } catch (error) {
    throw refuse((error as Error).message, error);
  }
  if (!own) compiled.set(text, validate);
  return checkWith(validate);
}

function checkWith(validate: ValidateFunction): OutputCheck {
  return (value) => (validate(value) ? undefined : (validate.errors ?? []).slice(0, 8).map(render).join('; ') || 'it does not match');
}

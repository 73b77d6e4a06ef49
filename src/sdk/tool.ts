/**
 * `tool({...})`: a tool of the native engine described by a validator. The
 * validator checks the model's arguments (the model is told when they do not
 * match, as for any tool) and types `execute`'s input; the JSON Schema the
 * model reads comes from the validator's own converter (see tool-schema.ts).
 * The result is an engine tool (`AgentTool`), so an Agent hands it to the
 * same run path as `runAgent`'s own tools.
 */
import { createHash } from 'node:crypto';
import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { AgentTool, JsonValue, Message, ToolExecuteContext } from '../agent/types.js';
import { ToolDefinitionError } from './errors.js';
import { toolSchemaOf, type CheckedSchema } from './tool-schema.js';

/** What `execute` (and a `requiresApproval` predicate) gets besides its input. */
export interface ToolContext {
  /** Aborted when the run is cancelled or its deadline passes: hand it to the work the tool starts. */
  abortSignal: AbortSignal;
  /**
   * The identity of this call's effect: the same for the same call of the
   * same run across crashes, restarts and resumes (it is derived from the
   * receipt's identity: run, model step, provider call id), and different for
   * every other call. Pass it to the system the tool changes as its
   * idempotency key, so a call the run repeats after a crash lands once.
   */
  idempotencyKey: string;
  /** The run this call belongs to. */
  runId: string;
  /** The provider's call id. */
  toolCallId: string;
  /** The model turn that issued the call. */
  modelStep: number;
  /** The conversation up to the turn that issued the call. */
  messages: readonly Message[];
}

/** The input a schema's validator produces (zod's `z.infer`). */
export type ToolInput<S extends StandardSchemaV1> = StandardSchemaV1.InferOutput<S>;

export interface ToolOptions<S extends StandardSchemaV1, R> {
  /** The name the model calls the tool by: 1 to 64 of `A-Z a-z 0-9 _ -`. */
  name: string;
  /** What the tool does, for the model. */
  description?: string;
  /** The arguments' validator: zod 3 or 4, or any Standard Schema v1 value (valibot, arktype, ...). It must describe an object. */
  schema: S;
  /**
   * The JSON Schema the model gets, when the validator has no converter (or
   * you want another description). Wins over the validator's own conversion;
   * the validator still checks every call.
   */
  jsonSchema?: { type: 'object'; [key: string]: unknown };
  /** Runs the effect with the validated input. */
  execute: (input: ToolInput<S>, context: ToolContext) => R | Promise<R>;
  /** Hold each call for an application-owned decision before its effect. @default false */
  requiresApproval?: boolean | ((input: ToolInput<S>, context: ToolContext) => boolean | Promise<boolean>);
  /**
   * How the call waits for the decision. `'interrupt'`: the run stops before
   * the effect, and its state lists the pending approval for the application
   * to answer (see docs/agent-class.md). @default 'interrupt'
   */
  approvalMode?: 'interrupt';
  /**
   * The version of what an approval of this tool means (a policy date, a
   * contract revision). An approval is bound to the version it was asked
   * under: after a change, a decision made under the old one decides nothing
   * and the call is asked for again.
   */
  approvalVersion?: string;
  /** `'idempotent'`: a call a crash interrupted may run again under the same idempotencyKey. @default 'never' */
  replay?: 'idempotent' | 'never';
  /** What the model sees of the result. @default the result itself */
  toModelOutput?: (result: Awaited<R>) => JsonValue | string;
}

/** A tool made by {@link tool}: an engine tool that also keeps its name and approval settings. */
export interface Tool<Input = unknown, Result = unknown> extends AgentTool<JsonValue, Result, ToolRunContext | undefined> {
  readonly name: string;
  /** The validator, as the engine gets it: a Standard Schema value carrying the JSON Schema the model reads. */
  parameters: StandardSchemaV1 & { jsonSchema: Record<string, unknown> };
  readonly approvalMode?: 'interrupt';
  readonly approvalVersion?: string;
  /** Marks a value made by `tool()`; the input type is kept for inference only. */
  readonly kind: 'cairn-tool';
  readonly '~input'?: Input;
}

/** What an Agent hands each of its tools through the engine's `toolsContext`. */
export interface ToolRunContext {
  runId: string;
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The idempotency key of a call: a digest of the receipt's identity within the run. */
export function idempotencyKeyOf(runId: string, modelStep: number, toolCallId: string): string {
  const hash = createHash('sha256').update(JSON.stringify([runId, modelStep, toolCallId])).digest('hex');
  return `cairn_${hash.slice(0, 40)}`;
}

function contextOf(ctx: ToolExecuteContext<ToolRunContext | undefined>): ToolContext {
  const runId = ctx.context?.runId ?? '';
  return {
    abortSignal: ctx.signal,
    idempotencyKey: idempotencyKeyOf(runId, ctx.modelStep, ctx.toolCallId),
    runId,
    toolCallId: ctx.toolCallId,
    modelStep: ctx.modelStep,
    messages: ctx.messages,
  };
}

function refuse(message: string, name?: string): never {
  throw new ToolDefinitionError('tool_definition_invalid', message, name);
}

function checkOptions(options: ToolOptions<StandardSchemaV1, unknown>): string {
  if (options === null || typeof options !== 'object') refuse('tool() takes an options object: { name, schema, execute, ... }.');
  const { name } = options;
  if (typeof name !== 'string' || name === '') refuse('tool(): name is required: the name the model calls the tool by.');
  if (!TOOL_NAME.test(name)) refuse(`tool "${name}": name must be 1 to 64 of A-Z a-z 0-9 _ - (${TOOL_NAME}).`, name);
  if (typeof options.execute !== 'function') refuse(`tool "${name}": execute must be a function.`, name);
  if (options.description !== undefined && typeof options.description !== 'string') refuse(`tool "${name}": description must be a string.`, name);
  const approval = options.requiresApproval;
  if (approval !== undefined && typeof approval !== 'boolean' && typeof approval !== 'function') {
    refuse(`tool "${name}": requiresApproval must be a boolean or a function of the input.`, name);
  }
  if (options.approvalMode !== undefined) {
    if (options.approvalMode !== 'interrupt') refuse(`tool "${name}": approvalMode must be 'interrupt', got ${JSON.stringify(options.approvalMode)}.`, name);
    if (!approval) refuse(`tool "${name}": approvalMode needs requiresApproval.`, name);
  }
  if (options.approvalVersion !== undefined && (typeof options.approvalVersion !== 'string' || options.approvalVersion === '')) {
    refuse(`tool "${name}": approvalVersion must be a non-empty string.`, name);
  }
  if (options.replay !== undefined && options.replay !== 'idempotent' && options.replay !== 'never') {
    refuse(`tool "${name}": replay must be 'idempotent' or 'never'.`, name);
  }
  if (options.toModelOutput !== undefined && typeof options.toModelOutput !== 'function') refuse(`tool "${name}": toModelOutput must be a function.`, name);
  return name;
}

/** The validated input of a call: the one the engine's check produced when it is at hand, else validated again. */
async function inputOf(schema: CheckedSchema, name: string, args: JsonValue): Promise<unknown> {
  const known = schema.parsed(args);
  if (known.found) return known.value;
  const result = await schema.validate(args);
  if (result.issues) {
    // The engine checked these arguments before the gate: only a validator that answers differently twice gets here.
    throw new ToolDefinitionError('tool_definition_invalid', `tool "${name}": its schema rejected arguments it had accepted.`, name);
  }
  return result.value;
}

/**
 * Defines a tool.
 *
 * @example
 * ```ts
 * const lookupAccount = tool({
 *   name: 'lookupAccount',
 *   schema: z.object({ accountId: z.string() }),
 *   execute: async ({ accountId }, { idempotencyKey }) => loadAccount(accountId, idempotencyKey),
 * });
 * ```
 */
export function tool<S extends StandardSchemaV1, R>(options: ToolOptions<S, R>): Tool<ToolInput<S>, Awaited<R>> {
  const name = checkOptions(options as unknown as ToolOptions<StandardSchemaV1, unknown>);
  const schema = toolSchemaOf(name, options.schema, options.jsonSchema);
  const execute = options.execute as (input: unknown, context: ToolContext) => unknown;
  const approval = options.requiresApproval as boolean | ((input: unknown, context: ToolContext) => boolean | Promise<boolean>) | undefined;
  const made: Tool<ToolInput<S>, Awaited<R>> = {
    kind: 'cairn-tool',
    name,
    ...(options.description !== undefined ? { description: options.description } : {}),
    parameters: schema.parameters,
    execute: async (args: JsonValue, ctx: ToolExecuteContext<ToolRunContext | undefined>): Promise<Awaited<R>> =>
      (await execute(await inputOf(schema, name, args), contextOf(ctx))) as Awaited<R>,
    ...(typeof approval === 'function'
      ? { needsApproval: async (args: JsonValue, ctx: ToolExecuteContext<ToolRunContext | undefined>) => approval(await inputOf(schema, name, args), contextOf(ctx)) === true }
      : approval === true ? { needsApproval: true } : {}),
    ...(approval ? { approvalMode: options.approvalMode ?? 'interrupt' } : {}),
    ...(options.approvalVersion !== undefined ? { approvalVersion: options.approvalVersion } : {}),
    ...(options.replay !== undefined ? { replay: options.replay } : {}),
    ...(options.toModelOutput ? { toModelOutput: options.toModelOutput as (result: unknown) => JsonValue | string } : {}),
  };
  return made;
}

/** True for a value made by {@link tool}. */
export function isTool(value: unknown): value is Tool {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'cairn-tool' &&
    typeof (value as { name?: unknown }).name === 'string';
}

/**
 * The tool contract of the native engine: what a tool declares (its schema,
 * effect, approval and replay rules) and what its callbacks and guards get.
 */
import type { JsonValue } from './json.js';
import type { ModelMessage as Message } from '../models/types.js';

/** The `~standard` interface of a Standard Schema value (zod, valibot, arktype ...). */
export interface StandardSchemaV1<Output = unknown> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) =>
      | { value: Output; issues?: undefined }
      | { issues: ReadonlyArray<{ message: string }> }
      | Promise<{ value: Output; issues?: undefined } | { issues: ReadonlyArray<{ message: string }> }>;
  };
}

/** What a tool's `execute` and approval callbacks receive besides the arguments. */
export interface ToolExecuteContext<C = unknown> {
  /** The provider's call id; with `modelStep` it is stable across resume. */
  toolCallId: string;
  /** The root model turn that issued the call. */
  modelStep: number;
  /** The conversation up to and including the turn that issued the call. */
  messages: readonly Message[];
  /** Aborted when the run is cancelled or its deadline passes. */
  signal: AbortSignal;
  /** The validated `toolsContext` entry for this tool. */
  context: C;
}

export interface AgentTool<Args = any, Result = any, C = any> {
  description?: string;
  /**
   * Schema of the arguments, of type "object": a JSON Schema (checked against
   * its meta-schema when the run starts, compiled with ajv), or a Standard
   * Schema value that converts itself to JSON Schema (zod 4). The model gets
   * the JSON Schema; every call's arguments are checked before approval and
   * effect, and a call that does not match ends as `invalid-arguments`.
   */
  parameters: JsonValue | { type: 'object'; [key: string]: unknown } | StandardSchemaV1<unknown>;
  /** Runs the effect. A tool without `execute` is a client tool: the run suspends until `clientToolResults` answers it. */
  execute?: (args: Args, ctx: ToolExecuteContext<C>) => Result | Promise<Result>;
  /** `true`, or a predicate over the call, to hold the call for a human verdict. @default false */
  needsApproval?: boolean | ((args: Args, ctx: ToolExecuteContext<C>) => boolean | Promise<boolean>);
  /** `'idempotent'`: an interrupted call may run again under the same [modelStep, toolCallId]. @default 'never' */
  replay?: 'idempotent' | 'never';
  /** Schema of the raw result (JSON Schema needs `validateResult`; a Standard Schema validates itself). */
  outputSchema?: JsonValue | StandardSchemaV1<unknown>;
  /** Validates (and may normalize) the raw result; throw to reject it. */
  validateResult?: (result: unknown) => unknown;
  /** Projects the validated result into what the model sees. @default the result itself */
  toModelOutput?: (result: any) => JsonValue | string;
  /** Schema of the `toolsContext` entry (JSON Schema needs `validateContext`). */
  contextSchema?: JsonValue | StandardSchemaV1<unknown>;
  validateContext?: (value: unknown) => C;
}

export type AgentTools = Record<string, AgentTool>;

export interface ToolCallGuardInput {
  toolCallId: string;
  toolName: string;
  args: JsonValue;
  modelStep: number;
}
export type ToolCallGuardDecision =
  | void
  | undefined
  | { action: 'allow' }
  | { action: 'block'; reason: string }
  | { action: 'rewrite'; args: JsonValue };

export interface ToolResultGuardInput {
  toolCallId: string;
  toolName: string;
  modelStep: number;
  /** The tool's projection (what the model would see). */
  output: JsonValue | string;
  isError: boolean;
}

/**
 * An MCP tool as a tool of the run: the same definition a local tool has, so
 * its calls take the run's one tool path (policy, guardrails, approval,
 * admission, the `executing` receipt, execution, the result receipt,
 * checkpoint). Its execute is one `tools/call` with the call's abort signal.
 * @internal
 */
import type { AgentTool, JsonValue } from '../agent/types.js';
import { toJson } from '../agent/json.js';
import type { CatalogTool } from './catalog.js';
import type { McpConnection } from './connection.js';
import { McpError, outcomeUnknown } from './errors.js';
import type { OutputCheck } from './schemas.js';
import type { SdkCallResult } from './sdk.js';
import { isCallResult, mcpProjection, textOf, type McpToolResult } from './projection.js';

export type { McpToolResult } from './projection.js';

export interface ToolHooks {
  /** A warning on the run's stream (a call whose outcome is unknown says why). */
  warn(message: string, toolCallId: string): void;
  /** The model step of a call that is with a server (sampling requests are charged to it). */
  calling(modelStep: number, done: boolean): void;
}

function resultOf(answer: SdkCallResult): McpToolResult {
  const content = toJson<JsonValue[]>(Array.isArray(answer.content) ? answer.content : []);
  const structured = answer.structuredContent;
  return structured === undefined ? { content } : { content, structuredContent: toJson<{ [key: string]: JsonValue }>(structured) };
}

export function mcpTool(entry: CatalogTool, connection: McpConnection, output: OutputCheck | undefined, hooks: ToolHooks): AgentTool {
  const { server, name } = entry;
  const tool: AgentTool = {
    ...(entry.description !== null ? { description: entry.description } : {}),
    parameters: entry.inputSchema,
    replay: entry.replay,
    needsApproval: entry.approval,
    execute: async (args: Record<string, unknown>, ctx) => {
      hooks.calling(ctx.modelStep, false);
      let answer: SdkCallResult;
      try {
        answer = await connection.callTool(name, args ?? {}, ctx.signal);
      } catch (error) {
        if (outcomeUnknown(error)) hooks.warn(`${(error as Error).message} Reconcile call ${ctx.toolCallId} before the run goes on.`, ctx.toolCallId);
        throw error;
      } finally {
        hooks.calling(ctx.modelStep, true);
      }
      const result = resultOf(answer);
      // The tool ran and reported a failure: the model is told, as for a local tool that threw.
      if (answer.isError === true) throw new McpError('mcp_tool_error', server, textOf(result.content) || `MCP tool ${name} failed.`, { tool: name });
      return result;
    },
    // Cairn's own projection (pure and total): the chart applies it with the raw result, in one commit.
    toModelOutput: mcpProjection,
  };
  if (output) {
    tool.outputSchema = entry.outputSchema;
    // The raw result is in its receipt already; a result that fails the schema is the model's to hear about.
    tool.validateResult = (raw: unknown) => {
      // An outcome an operator recorded (reconciledToolResults) may be the structured content itself.
      const structured = isCallResult(raw) ? raw.structuredContent : raw;
      const issue = structured === undefined ? 'the result has no structuredContent' : output(structured);
      if (issue !== undefined) {
        throw new McpError(
          'mcp_output_invalid', server,
          `MCP tool ${name} of server ${server} returned a result that does not match its outputSchema (mcp_output_invalid): ${issue}`,
          { tool: name },
        );
      }
      return raw;
    };
  }
  return tool;
}

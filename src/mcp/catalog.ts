/**
 * The servers' tool catalog: each listed tool under the name the model sees,
 * with its checked schemas, its replay policy and its approval gate, and the
 * fingerprint of the whole catalog that the run's binding records. @internal
 */
import { createHash } from 'node:crypto';
import type { ToolParameters } from '../agent/arguments.js';
import { digestOf } from '../agent/digest.js';
import { toJson, type JsonValue } from '../agent/json.js';
import { McpError } from './errors.js';
import { inputParameters, outputCheck, type OutputCheck } from './schemas.js';
import type { SdkTool } from './sdk.js';
import type { CheckedMcpServer } from './types.js';

const MAX_NAME = 64;

export interface CatalogTool {
  /** The name the model sees and receipts record. */
  offered: string;
  server: string;
  /** The server's own name of the tool. */
  name: string;
  description: string | null;
  inputSchema: JsonValue;
  outputSchema: JsonValue | null;
  replay: 'idempotent' | 'never';
  approval: boolean;
}

export interface Catalog {
  /** By offered name, in name order. */
  tools: Map<string, CatalogTool>;
  parameters: Record<string, ToolParameters>;
  outputs: Record<string, OutputCheck>;
  /** The binding's `mcp` fingerprint, and one per tool for saying what changed. */
  digest: string;
  parts: Record<string, string>;
}

/**
 * `<prefix><tool>` with every character a provider refuses in a tool name
 * made `_`; a name past 64 characters keeps 55 of them and a hash of the whole.
 */
export function offeredName(prefix: string, tool: string): string {
  const name = `${prefix}${tool}`.replace(/[^A-Za-z0-9_-]/g, '_');
  if (name.length <= MAX_NAME) return name;
  return `${name.slice(0, 55)}_${createHash('sha256').update(`${prefix}${tool}`).digest('hex').slice(0, 8)}`;
}

function replayOf(server: CheckedMcpServer, tool: SdkTool): 'idempotent' | 'never' {
  if (server.replay === 'never') return 'never';
  const hints = tool.annotations;
  return hints?.idempotentHint === true || hints?.readOnlyHint === true ? 'idempotent' : 'never';
}

/**
 * The catalog of the listed tools. Refuses, naming the server and the tool, a
 * schema that is not valid JSON Schema (mcp_tool_schema_invalid) and a name
 * that two tools would share, or that a local tool has (mcp_tool_name_duplicate).
 */
export function buildCatalog(listed: readonly { server: CheckedMcpServer; tools: readonly SdkTool[] }[], localNames: ReadonlySet<string>): Catalog {
  const tools = new Map<string, CatalogTool>();
  const parameters: Record<string, ToolParameters> = {};
  const outputs: Record<string, OutputCheck> = {};
  for (const { server, tools: serverTools } of listed) {
    for (const tool of serverTools) {
      const offered = offeredName(server.toolPrefix, tool.name);
      const other = tools.get(offered);
      if (other || localNames.has(offered)) {
        const clash = other ? `tool ${other.name} of server ${other.server}` : 'a tool of the run';
        throw new McpError(
          'mcp_tool_name_duplicate', server.name,
          `MCP server ${server.name} offers tool ${tool.name} as "${offered}", the name ${clash} has; give the server a toolPrefix.`,
          { tool: tool.name },
        );
      }
      parameters[offered] = inputParameters(server.name, tool.name, offered, tool.inputSchema);
      if (tool.outputSchema !== undefined) outputs[offered] = outputCheck(server.name, tool.name, tool.outputSchema);
      tools.set(offered, {
        offered,
        server: server.name,
        name: tool.name,
        description: typeof tool.description === 'string' ? tool.description : null,
        inputSchema: parameters[offered]!.wire,
        outputSchema: tool.outputSchema === undefined ? null : toJson<JsonValue>(tool.outputSchema),
        replay: replayOf(server, tool),
        approval: server.needsApproval === true || (Array.isArray(server.needsApproval) && server.needsApproval.includes(tool.name)),
      });
    }
  }
  const sorted = new Map([...tools.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const parts = Object.fromEntries([...sorted.values()].map((t) => [t.offered, digestOf(t)]));
  return { tools: sorted, parameters, outputs, digest: digestOf([...sorted.values()]), parts };
}

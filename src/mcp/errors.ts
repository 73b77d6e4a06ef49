/** The typed error of MCP servers in a run (docs/mcp.md, docs/errors.md). */
import { CairnError, type Fault } from '../errors/index.js';

export type McpErrorCode =
  | 'mcp_unavailable'
  | 'mcp_connect_failed'
  | 'mcp_protocol_error'
  | 'mcp_timeout'
  | 'mcp_tool_schema_invalid'
  | 'mcp_tool_name_duplicate'
  | 'mcp_tool_error'
  | 'mcp_output_invalid'
  | 'mcp_call_interrupted'
  | 'mcp_server_closed'
  | 'mcp_sampling_refused';

const FAULTS: Record<McpErrorCode, Fault> = {
  mcp_unavailable: 'user',
  mcp_connect_failed: 'dependency',
  mcp_protocol_error: 'dependency',
  mcp_timeout: 'dependency',
  mcp_tool_schema_invalid: 'dependency',
  mcp_tool_name_duplicate: 'user',
  mcp_tool_error: 'dependency',
  mcp_output_invalid: 'dependency',
  mcp_call_interrupted: 'dependency',
  mcp_server_closed: 'dependency',
  mcp_sampling_refused: 'user',
};

/**
 * Something about an MCP server of the run: it could not be reached or
 * answered garbage or nothing (before any model call, the run fails and writes
 * nothing), one of its tools cannot be offered, a call's answer was an error
 * or did not match the tool's outputSchema, or a call was cut off so that its
 * outcome is unknown. `server` names the server, `tool` the server's own name
 * of the tool when one is concerned.
 */
export class McpError extends CairnError {
  declare readonly code: McpErrorCode;
  readonly server: string;
  readonly tool?: string;

  constructor(code: McpErrorCode, server: string, message: string, options: { tool?: string; cause?: unknown } = {}) {
    super(code, message, { fault: FAULTS[code], isRetryable: code === 'mcp_timeout' || code === 'mcp_connect_failed', cause: options.cause });
    this.name = 'McpError';
    this.server = server;
    if (options.tool !== undefined) this.tool = options.tool;
  }
}

/** A call cut off while it was with the server: nobody knows whether its effect happened. */
export function outcomeUnknown(error: unknown): boolean {
  return McpError.isInstance(error) && error.code === 'mcp_call_interrupted';
}

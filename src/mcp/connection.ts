/**
 * One connected MCP server: the SDK client over its transport, with the
 * handshake, `tools/list` and `tools/call` held to their timeouts, and every
 * way the exchange can go wrong turned into a typed McpError. A call cut off
 * while the server had it is `mcp_call_interrupted`: its outcome is unknown.
 * @internal
 */
import { McpError } from './errors.js';
import { loadMcpSdk, type McpSdk, type SdkCallResult, type SdkClient, type SdkCreateMessageRequest, type SdkCreateMessageResult, type SdkTool } from './sdk.js';
import type { CheckedMcpServer } from './types.js';

const CLIENT_INFO = { name: 'cairn', version: '0.1.0' };
/** JSON-RPC codes the SDK itself raises for a request: the connection closed, the request timed out. */
const CONNECTION_CLOSED = -32000;
const REQUEST_TIMEOUT = -32001;
const METHOD_NOT_FOUND = -32601;
/**
 * The SDK client would compile every outputSchema it lists (an invalid one then fails the listing as a whole) and
 * check results against it. Cairn checks both itself, so that a bad schema names its tool and a bad result is a
 * validation failure recorded with its raw result: the client's own checks pass everything.
 */
const CHECKED_BY_CAIRN = {
  getValidator: () => (input: unknown) => ({ valid: true as const, data: input as never, errorMessage: undefined }),
};
/** How much of a stdio server's stderr is kept, for the message of a failed start. */
const STDERR_TAIL = 2_000;

export interface ConnectionHandlers {
  /** The server said its tool list changed. */
  onToolsChanged(): void;
  /** A sampling request; absent: sampling is off and the client does not offer it. */
  sample?: (request: SdkCreateMessageRequest['params'], signal: AbortSignal) => Promise<SdkCreateMessageResult>;
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** What the SDK reports of a message it could not read: not JSON, or JSON that is not JSON-RPC (checked with zod). */
function isGarbage(error: unknown): boolean {
  const e = error as { name?: unknown; issues?: unknown } | null;
  return error instanceof SyntaxError || e?.name === 'ZodError' || Array.isArray(e?.issues);
}

function codeIn(error: unknown, code: string): boolean {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++) {
    if (e.code === code) return true;
  }
  return false;
}

export class McpConnection {
  closed = false;
  private protocolError: unknown = null;
  /** A handshake or a listing timed out: the server is stopped at once when closed, not asked to exit. */
  private stuck = false;
  private stderr = '';
  private closing: Promise<void> | null = null;
  private onClosed: (() => void) | null = null;

  private constructor(
    readonly server: CheckedMcpServer,
    readonly sdk: McpSdk,
    readonly client: SdkClient,
    private readonly transport: { close(): Promise<void>; pid?: number | null },
  ) {}

  /** Starts or reaches the server and makes the handshake, within `connectMs`. */
  static async open(server: CheckedMcpServer, handlers: ConnectionHandlers): Promise<McpConnection> {
    const sdk = await loadMcpSdk(server.name);
    const client = new sdk.Client(CLIENT_INFO, { capabilities: handlers.sample ? { sampling: {} } : {}, jsonSchemaValidator: CHECKED_BY_CAIRN });
    const t = server.transport;
    const transport = t.type === 'stdio'
      ? new sdk.StdioClientTransport({
        command: t.command, ...(t.args ? { args: t.args } : {}), ...(t.env ? { env: t.env } : {}), ...(t.cwd ? { cwd: t.cwd } : {}),
        stderr: 'pipe',
      })
      : new sdk.StreamableHTTPClientTransport(new URL(t.url), t.headers ? { requestInit: { headers: t.headers } } : undefined);
    const connection = new McpConnection(server, sdk, client, transport as never);
    if (transport instanceof sdk.StdioClientTransport) {
      transport.stderr?.on('data', (chunk: Buffer) => {
        connection.stderr = (connection.stderr + chunk.toString('utf8')).slice(-STDERR_TAIL);
      });
    }
    client.setNotificationHandler(sdk.types.ToolListChangedNotificationSchema, () => handlers.onToolsChanged());
    if (handlers.sample) {
      const sample = handlers.sample;
      client.setRequestHandler(sdk.types.CreateMessageRequestSchema, (request, extra) => sample(request.params, extra.signal));
    }
    let fail: (error: unknown) => void = () => undefined;
    const failed = new Promise<never>((_, reject) => (fail = reject));
    failed.catch(() => undefined);
    // Garbage on the wire or a server that went away fails the handshake at once, not at its timeout.
    client.onerror = (error) => {
      if (isGarbage(error)) connection.protocolError ??= error;
      fail(error);
    };
    client.onclose = () => {
      connection.closed = true;
      connection.onClosed?.();
      fail(new Error('the server closed the connection'));
    };
    try {
      await Promise.race([client.connect(transport as never, { timeout: server.timeouts.connectMs }), failed]);
    } catch (error) {
      const refused = connection.connectError(error);
      await connection.close();
      throw refused;
    }
    client.onerror = (error) => {
      if (isGarbage(error)) connection.protocolError ??= error;
    };
    return connection;
  }

  private connectError(error: unknown): McpError {
    const name = this.server.name;
    const tail = this.stderr.trim() ? ` Its stderr ended with: ${this.stderr.trim().slice(-500)}` : '';
    if (this.isTimeout(error)) {
      this.stuck = true;
      return new McpError('mcp_timeout', name, `MCP server ${name} did not finish its handshake within ${this.server.timeouts.connectMs} ms.${tail}`, { cause: error });
    }
    if (this.protocolError !== null && !this.closedByPeer(error)) {
      return new McpError('mcp_protocol_error', name, `MCP server ${name} answered with something that is not MCP: ${messageOf(this.protocolError)}`, { cause: error });
    }
    if (this.looksLikeGarbage(error)) {
      return new McpError('mcp_protocol_error', name, `MCP server ${name} answered the handshake with something that is not MCP: ${messageOf(error)}`, { cause: error });
    }
    return new McpError('mcp_connect_failed', name, `MCP server ${name} could not be reached: ${messageOf(error)}.${tail}`, { cause: error });
  }

  private isTimeout(error: unknown): boolean {
    return error instanceof this.sdk.types.McpError && error.code === REQUEST_TIMEOUT;
  }

  private closedByPeer(error: unknown): boolean {
    return (error instanceof this.sdk.types.McpError && error.code === CONNECTION_CLOSED) || /closed the connection/.test(messageOf(error));
  }

  /** A result that does not parse as what MCP says it is (the SDK checks each with zod). */
  private looksLikeGarbage(error: unknown): boolean {
    return isGarbage(error) || /invalid_type|Invalid input|Unexpected token/i.test(messageOf(error));
  }

  /** Every tool the server lists, all pages, within `listMs`. */
  async listTools(): Promise<SdkTool[]> {
    const name = this.server.name;
    const deadline = Date.now() + this.server.timeouts.listMs;
    const tools: SdkTool[] = [];
    let cursor: string | undefined;
    try {
      do {
        const timeout = Math.max(1, deadline - Date.now());
        const page = await this.client.listTools(cursor === undefined ? undefined : { cursor }, { timeout });
        tools.push(...page.tools);
        cursor = page.nextCursor;
        if (cursor !== undefined && Date.now() >= deadline) throw new this.sdk.types.McpError(REQUEST_TIMEOUT, 'tools/list timed out');
      } while (cursor !== undefined);
    } catch (error) {
      if (error instanceof this.sdk.types.McpError && error.code === METHOD_NOT_FOUND) return [];
      if (this.isTimeout(error)) this.stuck = true;
      if (this.isTimeout(error)) throw new McpError('mcp_timeout', name, `MCP server ${name} did not list its tools within ${this.server.timeouts.listMs} ms.`, { cause: error });
      if (this.closed || this.closedByPeer(error)) throw new McpError('mcp_server_closed', name, `MCP server ${name} closed the connection while listing its tools.`, { cause: error });
      throw new McpError('mcp_protocol_error', name, `MCP server ${name} answered tools/list with something that is not a tool list: ${messageOf(error)}`, { cause: error });
    }
    return tools;
  }

  /**
   * One `tools/call`. Refused without sending when the connection is gone
   * (nothing ran); cut off after it was sent (the connection closed, the
   * timeout passed, the run was aborted, the answer was garbage):
   * `mcp_call_interrupted`, whose outcome is unknown.
   */
  async callTool(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<SdkCallResult> {
    const name = this.server.name;
    if (this.closed) throw new McpError('mcp_server_closed', name, `MCP server ${name} is no longer connected; ${tool} was not called.`, { tool });
    const timeout = this.server.timeouts.callMs;
    try {
      return await this.client.request(
        { method: 'tools/call', params: { name: tool, arguments: args } },
        this.sdk.types.CallToolResultSchema,
        { signal, timeout },
      ) as SdkCallResult;
    } catch (error) {
      if (codeIn(error, 'ECONNREFUSED')) {
        throw new McpError('mcp_server_closed', name, `MCP server ${name} refused the connection; ${tool} was not called.`, { tool, cause: error });
      }
      const known = error instanceof this.sdk.types.McpError && error.code !== CONNECTION_CLOSED && error.code !== REQUEST_TIMEOUT;
      if (known && !signal.aborted) {
        // The server answered the call with a JSON-RPC error: it is the call's outcome.
        throw new McpError('mcp_tool_error', name, `MCP server ${name} answered ${tool} with an error: ${messageOf(error)}`, { tool, cause: error });
      }
      const why = signal.aborted ? 'the run was cancelled or ran out of time'
        : this.isTimeout(error) ? `no answer came within ${timeout} ms`
          : this.closed || this.closedByPeer(error) ? 'the connection to the server ended'
            : `the answer could not be read (${messageOf(error)})`;
      throw new McpError('mcp_call_interrupted', name, `MCP tool ${tool} of server ${name} was cut off while the server had it: ${why}. Its outcome is unknown.`, { tool, cause: error });
    }
  }

  /** Calls `fn` once the connection ends (the server exited or hung up). */
  whenClosed(fn: () => void): void {
    this.onClosed = fn;
  }

  /** Ends the connection (a stdio server's stdin is closed, then it is stopped). Safe to call twice. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      // A server that failed its handshake or hangs is not waited for.
      if (this.stuck || this.protocolError !== null) {
        const pid = (this.transport as { pid?: number | null }).pid;
        if (typeof pid === 'number') {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // Gone already.
          }
        }
      }
      await this.client.close().catch(() => undefined);
    })();
    return this.closing;
  }
}

/**
 * The `mcp` option of a native run (docs/mcp.md): the servers whose tools the
 * run offers, what a resume does when their catalog changed, sampling, and
 * the timeouts. Nothing here names a type of @modelcontextprotocol/sdk: the
 * SDK is an optional peer, and a project without it still type-checks.
 */
import type { LanguageModel } from '../models/types.js';

/** A server started as a child process that speaks MCP on its stdin and stdout. */
export interface McpStdioTransport {
  type: 'stdio';
  /** The program to start (no shell). */
  command: string;
  args?: string[];
  /**
   * Variables set for the server, on top of a small safe set (HOME, LOGNAME,
   * PATH, SHELL, TERM, USER): the run's own environment is not passed on.
   */
  env?: Record<string, string>;
  /** @default the run's working directory */
  cwd?: string;
}

/** A server reached over MCP's Streamable HTTP transport. */
export interface McpHttpTransport {
  type: 'http';
  /** `http:` or `https:` URL of the server's MCP endpoint. */
  url: string;
  /** Sent with every request (an Authorization header, for example). Never stored in the run's record. */
  headers?: Record<string, string>;
}

/** Milliseconds each exchange with a server may take. */
export interface McpTimeouts {
  /** Starting or reaching the server and the initialize handshake. @default 10000 */
  connectMs?: number;
  /** One `tools/list` (every page of it). @default 10000 */
  listMs?: number;
  /** One `tools/call`. Past it the call's outcome is unknown (see docs/mcp.md). @default 60000 */
  callMs?: number;
}

export interface McpServerConfig {
  /** Names the server in tool names, errors and the binding: letters, digits, `_` and `-`, 1 to 32, no `__`. */
  name: string;
  transport: McpStdioTransport | McpHttpTransport;
  /**
   * Put before each of the server's tool names to make the name the model
   * sees; `''` offers the server's names as they are. @default `${name}__`
   */
  toolPrefix?: string;
  /**
   * `'annotations'`: a tool the server marks `idempotentHint` or `readOnlyHint`
   * may run again after an interruption (replay: 'idempotent'); `'never'`:
   * every tool of this server is treated as having effects. @default 'annotations'
   */
  replay?: 'annotations' | 'never';
  /** `true`, or the server's own names of the tools to hold, to hold calls for a human verdict. @default false */
  needsApproval?: boolean | string[];
  /** Overrides `mcp.timeouts` for this server. */
  timeouts?: McpTimeouts;
}

/** A Cairn model, or a Vercel AI SDK language model (as a run's `model` takes). */
export type McpSamplingModel = LanguageModel | {
  readonly specificationVersion: 'v2' | 'v3' | 'v4';
  readonly provider: string;
  readonly modelId: string;
  doGenerate(options: any): PromiseLike<unknown>;
  doStream(options: any): PromiseLike<unknown>;
};

/** Sampling requests the servers send (`sampling/createMessage`), answered with a model of the run's choosing. */
export interface McpSamplingOptions {
  /** The model that answers. Held to the run's execution policy and budget like any model call. */
  model: McpSamplingModel;
  /** Most tokens one answer may have; a request that asks for more gets this many. @default 1024 */
  maxTokens?: number;
}

export interface McpOptions {
  servers: McpServerConfig[];
  /**
   * What a resume does when the servers' tool catalog differs from the one the
   * run recorded: `'fail'` refuses with `Native agent binding changed across
   * resume.`; `'accept'` goes on with the new catalog and records it. @default 'fail'
   */
  onCatalogChange?: 'fail' | 'accept';
  /** Off unless given: a server that asks for sampling is told the client does not offer it. */
  sampling?: McpSamplingOptions;
  /** Defaults for every server. */
  timeouts?: McpTimeouts;
}

/** The options once checked: every default filled in. @internal */
export interface CheckedMcpServer {
  name: string;
  transport: McpStdioTransport | McpHttpTransport;
  toolPrefix: string;
  replay: 'annotations' | 'never';
  needsApproval: boolean | readonly string[];
  timeouts: Required<McpTimeouts>;
}

/** @internal */
export interface CheckedMcpOptions {
  servers: CheckedMcpServer[];
  onCatalogChange: 'fail' | 'accept';
  sampling: { model: LanguageModel; maxTokens: number } | null;
}

/**
 * The connected servers of one leg, as the tool loop sees them: at each step
 * boundary a catalog the servers announced since the last step is put in
 * place, and the run's tool names are given back when they changed. @internal
 */
export interface McpStepBoundary {
  atStepBoundary(): Promise<string[] | null>;
}

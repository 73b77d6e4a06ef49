/**
 * The MCP servers of one run leg: connected when the leg starts, their tools
 * put among the leg's tools (and their catalog in its binding), a catalog a
 * server announces (`notifications/tools/list_changed`) put in place at the
 * next step boundary, and every connection closed when the leg ends.
 * @internal
 */
import type { NormalizedOptions } from '../agent/options.js';
import type { AgentTool } from '../agent/types.js';
import type { Leg } from '../runtime/host-state.js';
import { buildCatalog, type Catalog } from './catalog.js';
import { describeCatalogChanges } from './catalog-changes.js';
import { McpConnection } from './connection.js';
import { McpError } from './errors.js';
import { answerSampling } from './sampling.js';
import type { SdkTool } from './sdk.js';
import { mcpTool } from './tool.js';
import type { CheckedMcpOptions, CheckedMcpServer, McpStepBoundary } from './types.js';

type Options = NormalizedOptions<unknown>;

export class McpLive implements McpStepBoundary {
  private readonly connections = new Map<string, McpConnection>();
  /** What each server listed, as the catalog in use has it. */
  private readonly listed = new Map<string, SdkTool[]>();
  private catalog!: Catalog;
  /** A catalog announced since the last step boundary, checked and ready. */
  private pending: Catalog | null = null;
  private refreshing: Promise<void> = Promise.resolve();
  private leg: Leg | null = null;
  private closing = false;
  /** The model step of the call last sent to a server (a sampling request is charged to it). */
  private step = 0;
  private readonly local: { tools: Record<string, AgentTool>; parameters: Options['parameters'] };

  private constructor(private readonly opts: Options, private readonly config: CheckedMcpOptions) {
    this.local = { tools: { ...opts.tools }, parameters: { ...opts.parameters } };
  }

  /**
   * Connects every server and lists its tools (in parallel), checks the
   * catalog and puts it in the leg's options. Any failure closes what was
   * opened and rejects with the McpError of the first server, in the order
   * the servers are given.
   */
  static async open(opts: Options, config: CheckedMcpOptions): Promise<McpLive> {
    const live = new McpLive(opts, config);
    const opened = await Promise.allSettled(config.servers.map(async (server) => {
      const connection = await McpConnection.open(server, live.handlersFor(server));
      live.connections.set(server.name, connection);
      live.listed.set(server.name, await connection.listTools());
    }));
    const failure = opened.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    try {
      if (failure) throw failure.reason;
      live.install(live.build(live.listed));
    } catch (error) {
      await live.close();
      throw error;
    }
    for (const [name, connection] of live.connections) {
      connection.whenClosed(() => {
        if (!live.closing) live.warn(`MCP server ${name} closed the connection; its tools fail until the run is resumed.`);
      });
    }
    return live;
  }

  private handlersFor(server: CheckedMcpServer) {
    const sampling = this.config.sampling;
    return {
      onToolsChanged: () => {
        this.refreshing = this.refreshing.then(() => this.refresh(server));
      },
      ...(sampling ? {
        sample: (params: Parameters<typeof answerSampling>[3], signal: AbortSignal) => {
          if (!this.leg) throw new McpError('mcp_sampling_refused', server.name, `MCP server ${server.name} asked for sampling before the run started.`);
          return answerSampling(this.leg, server.name, sampling, params, signal, this.step);
        },
      } : {}),
    };
  }

  private build(listed: ReadonlyMap<string, SdkTool[]>): Catalog {
    return buildCatalog(this.config.servers.map((server) => ({ server, tools: listed.get(server.name) ?? [] })), new Set(Object.keys(this.local.tools)));
  }

  /** The catalog's tools become the leg's (beside the local ones), and its fingerprint the binding's `mcp`. */
  private install(catalog: Catalog): void {
    const tools: Record<string, AgentTool> = { ...this.local.tools };
    for (const entry of catalog.tools.values()) {
      tools[entry.offered] = mcpTool(entry, this.connections.get(entry.server)!, catalog.outputs[entry.offered], {
        warn: (message, toolCallId) => this.warn(message, toolCallId),
        calling: (step) => {
          this.step = step;
        },
      });
    }
    this.opts.tools = tools;
    this.opts.parameters = { ...this.local.parameters, ...catalog.parameters };
    this.opts.binding.mcp = catalog.digest;
    if (this.opts.binding.parts) this.opts.binding.parts.mcp = catalog.parts;
    this.catalog = catalog;
  }

  /** A server's new tool list, checked against the others; a list that cannot be used keeps the current catalog. */
  private async refresh(server: CheckedMcpServer): Promise<void> {
    const connection = this.connections.get(server.name);
    if (!connection || this.closing) return;
    let tools: SdkTool[];
    try {
      tools = await connection.listTools();
    } catch (error) {
      this.warn(`MCP server ${server.name} announced a new tool list, which could not be read: ${(error as Error).message} The run keeps its current tools.`);
      return;
    }
    const listed = new Map(this.listed);
    listed.set(server.name, tools);
    try {
      this.pending = this.build(listed);
      this.listed.set(server.name, tools);
    } catch (error) {
      this.warn(`MCP server ${server.name} announced a new tool list that cannot be offered: ${(error as Error).message} The run keeps its current tools.`);
    }
  }

  /**
   * Between two steps: a catalog announced since the last boundary (its
   * listing awaited, within the server's listMs) takes the place of the
   * current one. Gives the run's tool names when they changed.
   */
  async atStepBoundary(): Promise<string[] | null> {
    await this.refreshing;
    const next = this.pending;
    this.pending = null;
    if (!next || next.digest === this.catalog.digest) return null;
    const changes = describeCatalogChanges(this.catalog.parts, next.parts);
    this.install(next);
    this.warn(`The MCP tool catalog changed (${changes.join('; ')}); the new one applies from this step on.`);
    return Object.keys(this.opts.tools);
  }

  /** The host of the leg: its stream for warnings, its policy and budget for sampling. */
  bind(leg: Leg<any>): void {
    this.leg = leg;
  }

  private warn(message: string, toolCallId?: string): void {
    this.leg?.emit({ type: 'warning', setting: 'mcp', message, ...(toolCallId !== undefined ? { toolCallId } : {}) });
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.all([...this.connections.values()].map((c) => c.close()));
  }
}

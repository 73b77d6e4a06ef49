/**
 * What the entry points do for a run with `mcp` (docs/mcp.md): connect the
 * servers at the start of a leg, check their catalog against the one a
 * resumed run recorded, hand the leg's host to the connections, and close
 * them when the leg ends. A run without `mcp` passes through untouched and
 * never loads the SDK. @internal
 */
import type { NormalizedOptions } from '../agent/options.js';
import type { AgentRunEnvelope, AgentWarning } from '../agent/types.js';
import type { Leg } from '../runtime/host-state.js';
import { describeCatalogChanges } from './catalog-changes.js';
import { McpLive } from './live.js';

type Options = NormalizedOptions<any>;

const liveOf = (opts: Options) => opts.mcpLive as McpLive | null;

/** Connects the servers and puts their tools in the leg's options. */
export async function connectMcp(opts: Options): Promise<void> {
  if (!opts.mcp || opts.mcpLive) return;
  opts.mcpLive = await McpLive.open(opts, opts.mcp);
}

/**
 * A resume's servers. A run that ended answers from its record, so its
 * servers are not contacted (its catalog stays the recorded one). Otherwise
 * they are connected, and with `onCatalogChange: 'accept'` a catalog that
 * changed is taken (the next save records it): the answer says so, and the
 * binding check is told to pass over `mcp`.
 */
export async function connectMcpForResume(opts: Options, stored: AgentRunEnvelope, ended: boolean): Promise<{ accepted: boolean; warnings: AgentWarning[] }> {
  const none = { accepted: false, warnings: [] };
  if (!opts.mcp) return none;
  if (ended) {
    if (stored.binding.mcp !== undefined) opts.binding.mcp = stored.binding.mcp;
    return none;
  }
  await connectMcp(opts);
  const before = stored.binding.mcp;
  if (opts.mcp.onCatalogChange !== 'accept' || before === undefined || before === opts.binding.mcp) return none;
  const changes = describeCatalogChanges(stored.binding.parts?.mcp, opts.binding.parts?.mcp);
  return {
    accepted: true,
    warnings: [{
      type: 'warning', setting: 'mcp',
      message: `The MCP tool catalog changed since the run was saved (${changes.join('; ')}); onCatalogChange: 'accept' takes the new one, and the run records it.`,
    }],
  };
}

/** The leg's host, once there is one: warnings go to its stream, sampling is held to its policy and budget. */
export function bindMcp(opts: Options, leg: Leg<any>): void {
  liveOf(opts)?.bind(leg);
}

/** Closes the leg's connections (a stdio server is stopped). */
export async function closeMcp(opts: Options | undefined): Promise<void> {
  const live = opts ? liveOf(opts) : null;
  if (!live) return;
  opts!.mcpLive = null;
  await live.close();
}

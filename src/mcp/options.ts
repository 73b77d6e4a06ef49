/**
 * The shape checks of `mcp`, made with the run's other options before
 * anything is started, read or written: a bad option is an
 * InvalidOptionsError and no server is contacted.
 */
import { InvalidOptionsError } from '../errors/index.js';
import { toCairnModel } from '../models/resolve.js';
import type { CheckedMcpOptions, CheckedMcpServer, McpOptions, McpServerConfig, McpTimeouts } from './types.js';

export const DEFAULT_MCP_TIMEOUTS: Required<McpTimeouts> = { connectMs: 10_000, listMs: 10_000, callMs: 60_000 };
export const DEFAULT_SAMPLING_MAX_TOKENS = 1024;

const SERVER_NAME = /^[A-Za-z0-9_-]{1,32}$/;
const PREFIX = /^[A-Za-z0-9_-]{0,40}$/;

const plainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function refuse(message: string): never {
  throw new InvalidOptionsError(`mcp: ${message}`);
}

function stringMap(where: string, value: unknown): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  if (!plainObject(value) || !Object.values(value).every((v) => typeof v === 'string')) refuse(`${where} must be an object of strings.`);
  return { ...(value as Record<string, string>) };
}

function timeoutsOf(where: string, value: unknown, base: Required<McpTimeouts>): Required<McpTimeouts> {
  if (value === undefined) return base;
  if (!plainObject(value)) refuse(`${where} must be { connectMs?, listMs?, callMs? }.`);
  const out = { ...base };
  for (const key of ['connectMs', 'listMs', 'callMs'] as const) {
    const ms = value[key];
    if (ms === undefined) continue;
    if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 1) refuse(`${where}.${key} must be a positive whole number of milliseconds.`);
    out[key] = ms;
  }
  for (const key of Object.keys(value)) if (!(key in out)) refuse(`${where} has no option ${JSON.stringify(key)}.`);
  return out;
}

function transportOf(where: string, value: unknown): McpServerConfig['transport'] {
  if (!plainObject(value)) refuse(`${where} must be { type: 'stdio', command, ... } or { type: 'http', url, ... }.`);
  if (value.type === 'stdio') {
    if (typeof value.command !== 'string' || value.command === '') refuse(`${where}.command must be a non-empty string.`);
    if (value.args !== undefined && (!Array.isArray(value.args) || !value.args.every((a) => typeof a === 'string'))) {
      refuse(`${where}.args must be an array of strings.`);
    }
    if (value.cwd !== undefined && (typeof value.cwd !== 'string' || value.cwd === '')) refuse(`${where}.cwd must be a non-empty string.`);
    const env = stringMap(`${where}.env`, value.env);
    return {
      type: 'stdio', command: value.command, ...(value.args ? { args: [...(value.args as string[])] } : {}),
      ...(env ? { env } : {}), ...(value.cwd !== undefined ? { cwd: value.cwd as string } : {}),
    };
  }
  if (value.type === 'http') {
    let url: URL;
    try {
      url = new URL(String(value.url));
    } catch {
      refuse(`${where}.url must be an http: or https: URL.`);
    }
    if (typeof value.url !== 'string' || (url.protocol !== 'http:' && url.protocol !== 'https:')) refuse(`${where}.url must be an http: or https: URL.`);
    const headers = stringMap(`${where}.headers`, value.headers);
    return { type: 'http', url: value.url, ...(headers ? { headers } : {}) };
  }
  refuse(`${where}.type must be 'stdio' or 'http', got ${JSON.stringify(value.type)}.`);
}

function serverOf(value: unknown, index: number, timeouts: Required<McpTimeouts>): CheckedMcpServer {
  const where = `servers[${index}]`;
  if (!plainObject(value)) refuse(`${where} must be an object { name, transport }.`);
  const name = value.name;
  if (typeof name !== 'string' || !SERVER_NAME.test(name) || name.includes('__')) {
    refuse(`${where}.name must be 1 to 32 letters, digits, _ or - without "__", got ${JSON.stringify(name)}.`);
  }
  const toolPrefix = value.toolPrefix ?? `${name}__`;
  if (typeof toolPrefix !== 'string' || !PREFIX.test(toolPrefix)) refuse(`${where}.toolPrefix must be up to 40 letters, digits, _ or -.`);
  const replay = value.replay ?? 'annotations';
  if (replay !== 'annotations' && replay !== 'never') refuse(`${where}.replay must be 'annotations' or 'never'.`);
  const approval = value.needsApproval ?? false;
  if (typeof approval !== 'boolean' && !(Array.isArray(approval) && approval.every((t) => typeof t === 'string'))) {
    refuse(`${where}.needsApproval must be a boolean or an array of the server's tool names.`);
  }
  return {
    name,
    transport: transportOf(`${where}.transport`, value.transport),
    toolPrefix,
    replay,
    needsApproval: typeof approval === 'boolean' ? approval : Object.freeze([...approval]),
    timeouts: timeoutsOf(`${where}.timeouts`, value.timeouts, timeouts),
  };
}

/** The checked `mcp` option, or null for a run without one. */
export function checkMcpOptions(value: McpOptions | undefined): CheckedMcpOptions | null {
  if (value === undefined) return null;
  if (!plainObject(value)) refuse('must be { servers: [...], onCatalogChange?, sampling?, timeouts? }.');
  if (!Array.isArray(value.servers) || value.servers.length === 0) refuse('servers must be a non-empty array.');
  const timeouts = timeoutsOf('timeouts', value.timeouts, DEFAULT_MCP_TIMEOUTS);
  const servers = value.servers.map((server, index) => serverOf(server, index, timeouts));
  const seen = new Set<string>();
  for (const server of servers) {
    if (seen.has(server.name)) refuse(`two servers are named ${JSON.stringify(server.name)}.`);
    seen.add(server.name);
  }
  const onCatalogChange = value.onCatalogChange ?? 'fail';
  if (onCatalogChange !== 'fail' && onCatalogChange !== 'accept') refuse("onCatalogChange must be 'fail' or 'accept'.");
  let sampling: CheckedMcpOptions['sampling'] = null;
  if (value.sampling !== undefined) {
    if (!plainObject(value.sampling)) refuse('sampling must be { model, maxTokens? }.');
    const maxTokens = value.sampling.maxTokens ?? DEFAULT_SAMPLING_MAX_TOKENS;
    if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1) refuse('sampling.maxTokens must be a positive whole number.');
    sampling = { model: toCairnModel(value.sampling.model as never, 'mcp.sampling.model'), maxTokens };
  }
  return { servers, onCatalogChange, sampling };
}

/**
 * What the model reads of an MCP tool's result: its structured content when it
 * has some, otherwise the text of its content blocks (anything that is not
 * text is named in brackets). Cairn's own projection, and the only one the
 * engine knows to be pure and total: it reads stored JSON, runs no user code
 * and cannot throw, so the tool-call chart applies it on the transition that
 * keeps the raw result (`resultProjectsInline`), and one commit holds both.
 * @internal
 */
import type { JsonValue } from '../agent/json.js';
import { toJson } from '../agent/json.js';

/** What a receipt keeps of a call's answer: its content blocks, and its structured content when it has one. */
export interface McpToolResult {
  content: JsonValue[];
  structuredContent?: { [key: string]: JsonValue };
}

type Block = { type?: unknown; text?: unknown; mimeType?: unknown; uri?: unknown; resource?: { uri?: unknown } | null };

/** The text the model reads of content blocks: text as it is, anything else named in brackets. */
export function textOf(content: readonly JsonValue[]): string {
  return content.map((raw) => {
    // Any JSON value may be stored here (a reconciled outcome): one that is not an object is a block of no type.
    const block: Block = raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Block) : {};
    if (block.type === 'text' && typeof block.text === 'string') return block.text;
    if (block.type === 'image' || block.type === 'audio') return `[${String(block.type)} ${nameOf(block.mimeType)}]`.replace(' ]', ']');
    if (block.type === 'resource_link') return `[resource ${nameOf(block.uri)}]`;
    if (block.type === 'resource') return `[resource ${nameOf(block.resource?.uri)}]`;
    return `[${block.type === undefined || block.type === null ? 'content' : nameOf(block.type)}]`;
  }).join('\n');
}

/** A field of a block as text (JSON of any shape: never throws). */
const nameOf = (value: unknown): string =>
  value === undefined || value === null ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);

/** A result as a call of the tool records it (reconciled outcomes may be any JSON). */
export function isCallResult(value: unknown): value is McpToolResult {
  return value !== null && typeof value === 'object' && Array.isArray((value as { content?: unknown }).content);
}

/** The model's copy of an MCP tool's result (the tool's toModelOutput). */
export function mcpProjection(result: unknown): JsonValue {
  return isCallResult(result) ? result.structuredContent ?? textOf(result.content) : toJson<JsonValue>(result);
}

/** The tool's projection is Cairn's own MCP projection (a tool spread into a new object keeps it; one given its own does not). */
export const isEngineProjection = (projection: unknown): boolean => projection === mcpProjection;

/**
 * Wire types of the Anthropic Messages API (POST /v1/messages), as far as the
 * adapter reads or writes them. Only the documented fields Cairn uses are
 * typed; everything else passes through untouched.
 */
import type { JsonValue } from '../../agent/json.js';

export interface CacheControl {
  type: 'ephemeral';
}

export interface TextBlock {
  type: 'text';
  text: string;
  cache_control?: CacheControl;
}

export type ImageSource =
  | { type: 'base64'; media_type: string; data: string }
  | { type: 'url'; url: string };

export interface ImageBlock {
  type: 'image';
  source: ImageSource;
  cache_control?: CacheControl;
}

export type DocumentSource =
  | { type: 'base64'; media_type: 'application/pdf'; data: string }
  | { type: 'text'; media_type: 'text/plain'; data: string }
  | { type: 'url'; url: string };

export interface DocumentBlock {
  type: 'document';
  source: DocumentSource;
  title?: string;
  cache_control?: CacheControl;
}

export interface ThinkingBlock {
  type: 'thinking';
  thinking: string;
  signature: string;
}

export interface RedactedThinkingBlock {
  type: 'redacted_thinking';
  data: string;
}

export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: JsonValue;
  cache_control?: CacheControl;
}

export interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content: string | Array<TextBlock | ImageBlock | DocumentBlock>;
  is_error?: boolean;
  cache_control?: CacheControl;
}

export type UserBlock = TextBlock | ImageBlock | DocumentBlock | ToolResultBlock;
export type AssistantBlock = ThinkingBlock | RedactedThinkingBlock | TextBlock | ToolUseBlock;

export type WireMessage =
  | { role: 'user'; content: UserBlock[] }
  | { role: 'assistant'; content: AssistantBlock[] };

export interface WireTool {
  name: string;
  description?: string;
  input_schema: JsonValue;
  cache_control?: CacheControl;
}

export type WireToolChoice =
  | { type: 'auto' }
  | { type: 'any' }
  | { type: 'none' }
  | { type: 'tool'; name: string };

export type WireThinking =
  | { type: 'enabled'; budget_tokens: number }
  | { type: 'adaptive' };

export interface WireOutputConfig {
  effort?: string;
  format?: { type: 'json_schema'; schema: JsonValue };
}

export interface MessagesRequestBody {
  model: string;
  max_tokens: number;
  messages: WireMessage[];
  system?: TextBlock[];
  tools?: WireTool[];
  tool_choice?: WireToolChoice;
  thinking?: WireThinking;
  output_config?: WireOutputConfig;
  temperature?: number;
  top_p?: number;
  stream?: boolean;
  [key: string]: unknown;
}

export interface WireUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

/** A content block of an answer; blocks of other types (server tools ...) are skipped. */
export type ResponseBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature?: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'tool_use'; id: string; name: string; input: JsonValue }
  | { type: string; [key: string]: unknown };

export interface MessagesResponse {
  id?: string;
  type?: string;
  model?: string;
  content: ResponseBlock[];
  stop_reason?: string | null;
  usage?: WireUsage;
}

/** The body of an error answer, and the data of a stream's `error` event. */
export interface WireError {
  type: 'error';
  error: { type: string; message?: string };
}

/**
 * Cairn messages → the Messages API's `system` and `messages`. The API takes
 * system text only at the top level, alternating user and assistant turns,
 * tool results as `tool_result` blocks of a user turn, and an assistant turn
 * whose thinking blocks come first and unchanged (their signature binds them).
 */
import type { JsonValue } from '../../agent/json.js';
import { InvalidOptionsError } from '../../errors/index.js';
import {
  isToolContent, type ModelMessage, type ReasoningPart, type UserContentPart,
} from '../../models/types.js';
import type {
  AssistantBlock, DocumentBlock, ImageBlock, RedactedThinkingBlock, TextBlock, ThinkingBlock, UserBlock, WireMessage,
} from './anthropic-api.js';

/** The key under which reasoning parts and metadata are Anthropic's. */
export const PROVIDER_KEY = 'anthropic';

export interface ConvertedPrompt {
  system: TextBlock[];
  messages: WireMessage[];
}

function isRecord(value: unknown): value is Record<string, JsonValue> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The thinking block a reasoning part stands for, or undefined when the part is
 * not Anthropic's (another provider's thinking never crosses) or carries
 * neither a signature nor redacted data (the API refuses a thinking block without them).
 */
export function thinkingBlockOf(part: ReasoningPart): ThinkingBlock | RedactedThinkingBlock | undefined {
  const own = part.providerMetadata?.[PROVIDER_KEY];
  if (!isRecord(own)) return undefined;
  if (typeof own.redactedData === 'string') return { type: 'redacted_thinking', data: own.redactedData };
  if (typeof own.signature === 'string') return { type: 'thinking', thinking: part.text, signature: own.signature };
  return undefined;
}

function imageBlock(part: { url?: string; data?: string; mediaType?: string }): ImageBlock {
  if (part.url !== undefined) return { type: 'image', source: { type: 'url', url: part.url } };
  if (part.data === undefined || !part.mediaType) {
    throw new InvalidOptionsError('An image for Anthropic needs a url, or data with its mediaType.');
  }
  return { type: 'image', source: { type: 'base64', media_type: part.mediaType, data: part.data } };
}

function fileBlock(part: Extract<UserContentPart, { type: 'file' }>): DocumentBlock | ImageBlock {
  const title = part.filename !== undefined ? { title: part.filename } : {};
  if (part.mediaType.startsWith('image/')) return imageBlock(part);
  if (part.mediaType === 'application/pdf') {
    if (part.url !== undefined) return { type: 'document', source: { type: 'url', url: part.url }, ...title };
    if (part.data !== undefined) return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: part.data }, ...title };
  }
  // Plain text travels as text; the API's URL source is for PDFs only.
  if (part.mediaType === 'text/plain' && part.data !== undefined) {
    const text = Buffer.from(part.data, 'base64').toString('utf8');
    return { type: 'document', source: { type: 'text', media_type: 'text/plain', data: text }, ...title };
  }
  throw new InvalidOptionsError(
    `Anthropic takes PDF files (by url or data), plain-text files (by data) and images; got ${part.mediaType}${part.url !== undefined ? ' by url' : ''}.`,
  );
}

function contentBlocks(parts: UserContentPart[]): Array<TextBlock | ImageBlock | DocumentBlock> {
  const out: Array<TextBlock | ImageBlock | DocumentBlock> = [];
  for (const part of parts) {
    if (part.type === 'text') {
      // The API refuses empty text blocks.
      if (part.text !== '') out.push({ type: 'text', text: part.text });
    } else if (part.type === 'image') {
      out.push(imageBlock(part));
    } else {
      out.push(fileBlock(part));
    }
  }
  return out;
}

function toolResultContent(content: JsonValue): string | Array<TextBlock | ImageBlock | DocumentBlock> {
  if (isToolContent(content)) return contentBlocks(content.parts);
  return typeof content === 'string' ? content : JSON.stringify(content);
}

function assistantBlocks(message: Extract<ModelMessage, { role: 'assistant' }>): AssistantBlock[] {
  const blocks: AssistantBlock[] = [];
  for (const part of message.reasoning ?? []) {
    const block = thinkingBlockOf(part);
    if (block) blocks.push(block);
  }
  if (message.content !== '') blocks.push({ type: 'text', text: message.content });
  for (const call of message.toolCalls ?? []) {
    // `input` must be an object; arguments that were not JSON (kept as their text) are sent as {}.
    blocks.push({ type: 'tool_use', id: call.toolCallId, name: call.toolName, input: isRecord(call.args) ? call.args : {} });
  }
  return blocks;
}

/** Tool results first: the API wants them at the head of the user turn that answers the calls. */
function userOrder(blocks: UserBlock[]): UserBlock[] {
  return [...blocks.filter((b) => b.type === 'tool_result'), ...blocks.filter((b) => b.type !== 'tool_result')];
}

export function convertMessages(messages: readonly ModelMessage[]): ConvertedPrompt {
  const system: TextBlock[] = [];
  const out: WireMessage[] = [];
  const push = (role: 'user' | 'assistant', blocks: Array<UserBlock | AssistantBlock>) => {
    // A turn with nothing in it is refused; leaving it out merges its neighbours.
    if (blocks.length === 0) return;
    const last = out[out.length - 1];
    if (last && last.role === role) {
      (last.content as Array<UserBlock | AssistantBlock>).push(...blocks);
    } else {
      out.push({ role, content: blocks } as WireMessage);
    }
  };
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        // Every system message, wherever it stands, goes to the top-level `system` in order.
        if (message.content !== '') system.push({ type: 'text', text: message.content });
        break;
      case 'user':
        push('user', typeof message.content === 'string'
          ? (message.content === '' ? [] : [{ type: 'text', text: message.content }])
          : contentBlocks(message.content));
        break;
      case 'assistant':
        push('assistant', assistantBlocks(message));
        break;
      case 'tool':
        push('user', [{
          type: 'tool_result',
          tool_use_id: message.toolCallId,
          content: toolResultContent(message.content),
          ...(message.isError ? { is_error: true } : {}),
        }]);
        break;
    }
  }
  for (const message of out) if (message.role === 'user') message.content = userOrder(message.content);
  return { system, messages: out };
}

/**
 * Cairn's messages as Gemini contents: a system instruction, then alternating
 * `user` and `model` contents (consecutive ones of a role merged). Model turns
 * carry their thought parts, text and function calls with each part's thought
 * signature exactly as Gemini returned it; tool results are user-role
 * functionResponse parts.
 */
import type { JsonValue } from '../../agent/json.js';
import {
  isToolContent, type ModelMessage, type ModelToolCall, type ToolContent, type UserContentPart,
} from '../../models/types.js';
import type { GeminiContent, GeminiJsonObject, GeminiPart } from './google-api.js';

/** The key this adapter reads and writes in providerMetadata. */
export const PROVIDER_KEY = 'google';

/**
 * What a reasoning part of this adapter carries under `providerMetadata.google`:
 * `part: 'thought'` for a thought summary, `part: 'text'` for the signature
 * Gemini put on the answer's text (the text itself is the turn's content).
 */
export interface GoogleReasoningMetadata {
  part: 'thought' | 'text';
  thoughtSignature?: string;
}

/** What a tool call of this adapter carries under `providerMetadata.google`. */
export interface GoogleToolCallMetadata {
  thoughtSignature?: string;
  /** The call's id when Gemini gave one (it must come back on the call and its response). */
  id?: string;
}

const isObject = (value: unknown): value is GeminiJsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function ownMetadata(metadata: Record<string, JsonValue> | undefined): Record<string, JsonValue> | undefined {
  const own = metadata?.[PROVIDER_KEY];
  return isObject(own) ? own : undefined;
}

const signatureOf = (own: Record<string, JsonValue> | undefined): string | undefined =>
  typeof own?.thoughtSignature === 'string' ? own.thoughtSignature : undefined;

const IMAGE_TYPES: Record<string, string> = {
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp', heic: 'image/heic', heif: 'image/heif',
};

/** An image URL's media type from its extension, when the message did not say. */
function guessImageType(url: string): string | undefined {
  const match = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(url);
  return match ? IMAGE_TYPES[match[1]!.toLowerCase()] : undefined;
}

/** A `data:` URL's media type and base64 bytes. */
function parseDataUrl(url: string): { mimeType: string; data: string } | undefined {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  return match ? { mimeType: match[1]!, data: match[2]! } : undefined;
}

function mediaPart(part: UserContentPart): GeminiPart {
  if (part.type === 'text') return { text: part.text };
  if (part.data !== undefined) return { inlineData: { mimeType: part.mediaType ?? 'application/octet-stream', data: part.data } };
  const url = part.url ?? '';
  const inline = parseDataUrl(url);
  if (inline) return { inlineData: inline };
  const mimeType = part.mediaType ?? (part.type === 'image' ? guessImageType(url) : undefined);
  return { fileData: { ...(mimeType ? { mimeType } : {}), fileUri: url } };
}

function userParts(content: string | UserContentPart[]): GeminiPart[] {
  return typeof content === 'string' ? [{ text: content }] : content.map(mediaPart);
}

function modelParts(message: Extract<ModelMessage, { role: 'assistant' }>): GeminiPart[] {
  const parts: GeminiPart[] = [];
  let textSignature: string | undefined;
  for (const reasoning of message.reasoning ?? []) {
    const own = ownMetadata(reasoning.providerMetadata);
    // Another provider's thinking never crosses.
    if (!own) continue;
    const signature = signatureOf(own);
    if (own.part === 'text') {
      textSignature = signature ?? textSignature;
      continue;
    }
    parts.push({ text: reasoning.text, thought: true, ...(signature !== undefined ? { thoughtSignature: signature } : {}) });
  }
  if (message.content !== '' || textSignature !== undefined) {
    parts.push({ text: message.content, ...(textSignature !== undefined ? { thoughtSignature: textSignature } : {}) });
  }
  for (const call of message.toolCalls ?? []) parts.push(functionCallPart(call));
  return parts;
}

function functionCallPart(call: ModelToolCall): GeminiPart {
  const own = ownMetadata(call.providerMetadata);
  const signature = signatureOf(own);
  const id = typeof own?.id === 'string' ? own.id : undefined;
  return {
    // Gemini's args are an object; a call from elsewhere whose arguments were not JSON goes without them.
    functionCall: { ...(id !== undefined ? { id } : {}), name: call.toolName, ...(isObject(call.args) ? { args: call.args } : {}) },
    ...(signature !== undefined ? { thoughtSignature: signature } : {}),
  };
}

function joinedText(content: ToolContent): string {
  return content.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text).join('\n');
}

function functionResponsePart(
  message: Extract<ModelMessage, { role: 'tool' }>,
  callIds: ReadonlyMap<string, string>,
): GeminiPart {
  const id = callIds.get(message.toolCallId);
  const content = message.content;
  let response: GeminiJsonObject;
  let nested: GeminiPart[] = [];
  if (isToolContent(content)) {
    const text = joinedText(content);
    response = message.isError ? { error: text } : { result: text };
    // Images and files of a result go inside the functionResponse (Gemini 3's multimodal function responses).
    nested = content.parts.filter((p) => p.type !== 'text').map(mediaPart);
  } else if (message.isError) {
    response = { error: content };
  } else {
    response = isObject(content) ? content : { result: content };
  }
  return {
    functionResponse: {
      ...(id !== undefined ? { id } : {}),
      name: message.toolName,
      response,
      ...(nested.length > 0 ? { parts: nested } : {}),
    },
  };
}

export interface GeminiConversation {
  systemInstruction?: { parts: Array<{ text: string }> };
  contents: GeminiContent[];
}

/**
 * The system messages before the first other message become the system
 * instruction; a later one (a memory recall appended to the history) is user
 * text in its place, so the prefix before it stays as it was.
 */
export function toGeminiConversation(messages: readonly ModelMessage[]): GeminiConversation {
  const system: Array<{ text: string }> = [];
  const contents: GeminiContent[] = [];
  // The Gemini ids of the latest model turn's calls, by Cairn's call id.
  let callIds = new Map<string, string>();
  const push = (role: GeminiContent['role'], parts: GeminiPart[]) => {
    if (parts.length === 0) return;
    const last = contents[contents.length - 1];
    if (last && last.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        if (contents.length === 0) system.push({ text: message.content });
        else push('user', [{ text: message.content }]);
        break;
      case 'user':
        push('user', userParts(message.content));
        break;
      case 'assistant':
        callIds = new Map();
        for (const call of message.toolCalls ?? []) {
          const id = ownMetadata(call.providerMetadata)?.id;
          if (typeof id === 'string') callIds.set(call.toolCallId, id);
        }
        push('model', modelParts(message));
        break;
      case 'tool':
        push('user', [functionResponsePart(message, callIds)]);
        break;
    }
  }
  return { ...(system.length > 0 ? { systemInstruction: { parts: system } } : {}), contents };
}

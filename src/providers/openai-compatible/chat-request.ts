/**
 * A model request as a Chat Completions body (POST /chat/completions), for
 * OpenAI and for the servers that speak its wire (Ollama, vLLM, LM Studio,
 * llama.cpp, OpenRouter). Chat Completions has no field for a turn's
 * reasoning, so reasoning parts are never sent back on this wire.
 */
import type { JsonValue } from '../../agent/json.js';
import type {
  ModelCallWarning, ModelMessage, ModelRequest, ModelToolSpec, ToolChoice, UserContentPart,
} from '../../models/types.js';
import { argsText, asToolContent, dataUrl, ownOptions, toolResultText } from './common.js';

/** How one provider speaks the wire. */
export interface ChatWireOptions {
  /** The model's provider name, and its key in providerOptions. */
  provider: string;
  modelId: string;
  /** Where maxOutputTokens goes: OpenAI's `max_completion_tokens`, or the older `max_tokens` that compatible servers take. */
  maxTokensField: 'max_completion_tokens' | 'max_tokens';
  /** The role of system messages (`developer` for OpenAI's reasoning models). */
  systemRole: 'system' | 'developer';
  /** `strict` on tools and on the JSON schema of structured output. */
  strictJsonSchema: boolean;
}

type Body = Record<string, unknown>;

function userPart(part: UserContentPart, warnings: ModelCallWarning[]): Body[] {
  if (part.type === 'text') return [{ type: 'text', text: part.text }];
  if (part.type === 'image') {
    const url = part.url ?? dataUrl(part.data ?? '', part.mediaType);
    return [{ type: 'image_url', image_url: { url } }];
  }
  if (part.data !== undefined) {
    return [{ type: 'file', file: { filename: part.filename ?? 'file', file_data: dataUrl(part.data, part.mediaType) } }];
  }
  // Chat Completions takes files only as bytes (file_data) or an uploaded file id, never by URL.
  warnings.push({ type: 'other', message: `Chat Completions takes no file by URL; the file ${part.url ?? ''} was left out.` });
  return [];
}

function toolMessage(message: Extract<ModelMessage, { role: 'tool' }>, warnings: ModelCallWarning[]): Body {
  const parts = asToolContent(message.content)?.parts;
  if (parts?.some((p) => p.type !== 'text')) {
    // The wire's tool messages hold text only.
    warnings.push({ type: 'other', message: `Chat Completions takes only text in a tool result; the images and files of ${message.toolCallId} were left out.` });
  }
  return { role: 'tool', tool_call_id: message.toolCallId, content: toolResultText(message.content) };
}

export function chatMessages(messages: readonly ModelMessage[], wire: ChatWireOptions, warnings: ModelCallWarning[]): Body[] {
  return messages.map((message): Body => {
    switch (message.role) {
      case 'system':
        return { role: wire.systemRole, content: message.content };
      case 'user':
        return {
          role: 'user',
          content: typeof message.content === 'string' ? message.content : message.content.flatMap((p) => userPart(p, warnings)),
        };
      case 'assistant': {
        const calls = message.toolCalls ?? [];
        return {
          role: 'assistant',
          content: message.content === '' && calls.length > 0 ? null : message.content,
          ...(calls.length > 0
            ? { tool_calls: calls.map((c) => ({ id: c.toolCallId, type: 'function', function: { name: c.toolName, arguments: argsText(c.args) } })) }
            : {}),
        };
      }
      case 'tool':
        return toolMessage(message, warnings);
    }
  });
}

function chatTools(tools: readonly ModelToolSpec[], strict: boolean): Body[] {
  return tools.map((t) => ({
    type: 'function',
    function: {
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      parameters: t.parameters,
      ...(strict ? { strict: true } : {}),
    },
  }));
}

function chatToolChoice(choice: ToolChoice): JsonValue {
  return typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.toolName } };
}

/** The body of one request (without `stream`), and the warnings about what it left out. */
export function chatBody(request: ModelRequest, wire: ChatWireOptions): { body: Body; warnings: ModelCallWarning[] } {
  const warnings: ModelCallWarning[] = [];
  const body: Body = { model: wire.modelId, messages: chatMessages(request.messages, wire, warnings) };
  if (request.tools.length > 0) {
    body.tools = chatTools(request.tools, wire.strictJsonSchema);
    body.tool_choice = chatToolChoice(request.toolChoice);
  }
  const s = request.settings ?? {};
  if (s.temperature !== undefined) body.temperature = s.temperature;
  if (s.topP !== undefined) body.top_p = s.topP;
  if (s.effort !== undefined) body.reasoning_effort = s.effort;
  if (s.maxOutputTokens !== undefined) body[wire.maxTokensField] = s.maxOutputTokens;
  // promptCaching needs nothing: OpenAI caches repeated prefixes on its own, and other servers have no field for it.
  const format = request.responseFormat;
  if (format) {
    body.response_format = format.schema !== undefined
      ? { type: 'json_schema', json_schema: { name: format.name ?? 'response', schema: format.schema, strict: wire.strictJsonSchema } }
      : { type: 'json_object' };
  }
  return { body: { ...body, ...ownOptions(request.providerOptions, wire.provider) }, warnings };
}

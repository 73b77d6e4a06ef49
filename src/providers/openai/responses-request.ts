/**
 * A model request as a Responses body (POST /responses). Requests are
 * stateless (`store: false`): the run keeps the transcript and sends it whole.
 * A reasoning model's thinking therefore travels as its encrypted content,
 * which the request asks for (`include: ['reasoning.encrypted_content']`) and
 * the next request sends back, byte for byte, before the turn's message and
 * calls.
 */
import type { JsonValue } from '../../agent/json.js';
import type {
  ModelCallWarning, ModelMessage, ModelRequest, ReasoningPart, ToolChoice, UserContentPart,
} from '../../models/types.js';
import { argsText, arr, asToolContent, dataUrl, obj, ownOptions, str } from '../openai-compatible/common.js';

/** The key of OpenAI's entry in providerOptions and providerMetadata. */
export const OPENAI = 'openai';

export interface ResponsesWireOptions {
  modelId: string;
  /** A reasoning model: developer messages, encrypted reasoning asked for. */
  reasoning: boolean;
  /** `reasoning.summary`, for reasoning models. */
  reasoningSummary?: 'auto' | 'concise' | 'detailed';
  strictJsonSchema: boolean;
}

type Body = Record<string, unknown>;

function inputPart(part: UserContentPart): Body {
  if (part.type === 'text') return { type: 'input_text', text: part.text };
  if (part.type === 'image') {
    return { type: 'input_image', image_url: part.url ?? dataUrl(part.data ?? '', part.mediaType), detail: 'auto' };
  }
  return part.data !== undefined
    ? { type: 'input_file', filename: part.filename ?? 'file', file_data: dataUrl(part.data, part.mediaType) }
    : { type: 'input_file', file_url: part.url };
}

/**
 * The reasoning item a part came from, rebuilt from what the adapter stored
 * under `providerMetadata.openai`; undefined for a part without it (another
 * provider's thinking, or one from Chat Completions), which is never sent.
 */
export function reasoningItem(part: ReasoningPart): Body | undefined {
  const meta = obj(part.providerMetadata?.[OPENAI]);
  const id = str(meta?.itemId);
  if (!meta || !id) return undefined;
  const encrypted = str(meta.encryptedContent);
  return { type: 'reasoning', id, summary: arr(meta.summary), ...(encrypted !== undefined ? { encrypted_content: encrypted } : {}) };
}

function toolOutput(content: JsonValue): JsonValue {
  const parts = asToolContent(content)?.parts;
  if (parts) return parts.map(inputPart) as JsonValue;
  return typeof content === 'string' ? content : JSON.stringify(content);
}

export function responsesInput(messages: readonly ModelMessage[], wire: ResponsesWireOptions): Body[] {
  return messages.flatMap((message): Body[] => {
    switch (message.role) {
      case 'system':
        return [{ role: wire.reasoning ? 'developer' : 'system', content: message.content }];
      case 'user':
        return [{ role: 'user', content: typeof message.content === 'string' ? message.content : message.content.map(inputPart) }];
      case 'assistant': {
        // The wire's order: the turn's reasoning items, then its message, then its calls.
        const items = (message.reasoning ?? []).map(reasoningItem).filter((item): item is Body => item !== undefined);
        if (message.content !== '') items.push({ role: 'assistant', content: [{ type: 'output_text', text: message.content }] });
        for (const call of message.toolCalls ?? []) {
          items.push({ type: 'function_call', call_id: call.toolCallId, name: call.toolName, arguments: argsText(call.args) });
        }
        return items;
      }
      case 'tool':
        return [{ type: 'function_call_output', call_id: message.toolCallId, output: toolOutput(message.content) }];
    }
  });
}

function toolChoice(choice: ToolChoice): JsonValue {
  return typeof choice === 'string' ? choice : { type: 'function', name: choice.toolName };
}

/** The body of one request (without `stream`), and the warnings about what it left out. */
export function responsesBody(request: ModelRequest, wire: ResponsesWireOptions): { body: Body; warnings: ModelCallWarning[] } {
  const warnings: ModelCallWarning[] = [];
  const body: Body = { model: wire.modelId, input: responsesInput(request.messages, wire), store: false };
  if (wire.reasoning) body.include = ['reasoning.encrypted_content'];
  if (request.tools.length > 0) {
    // `strict` is sent always: the Responses wire turns it on when it is left out.
    body.tools = request.tools.map((t) => ({
      type: 'function',
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      parameters: t.parameters,
      strict: wire.strictJsonSchema,
    }));
    body.tool_choice = toolChoice(request.toolChoice);
  }
  const s = request.settings ?? {};
  if (s.temperature !== undefined) body.temperature = s.temperature;
  if (s.topP !== undefined) body.top_p = s.topP;
  if (s.maxOutputTokens !== undefined) body.max_output_tokens = s.maxOutputTokens;
  const summary = wire.reasoning ? wire.reasoningSummary : undefined;
  if (s.effort !== undefined || summary !== undefined) {
    body.reasoning = { ...(s.effort !== undefined ? { effort: s.effort } : {}), ...(summary !== undefined ? { summary } : {}) };
  }
  // promptCaching needs nothing: OpenAI caches repeated prefixes on its own.
  const format = request.responseFormat;
  if (format) {
    body.text = {
      format: format.schema !== undefined
        ? { type: 'json_schema', name: format.name ?? 'response', schema: format.schema, strict: wire.strictJsonSchema }
        : { type: 'json_object' },
    };
  }
  return { body: { ...body, ...ownOptions(request.providerOptions, OPENAI) }, warnings };
}

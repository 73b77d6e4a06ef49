/**
 * A Cairn ModelRequest as AI SDK call options, for one specification version.
 * Reasoning parts and tool-call metadata go back only when they carry the AI
 * SDK provider's own key (its `providerOptions` name: `openai`, `anthropic`,
 * ...), so another provider's thinking never crosses.
 */
import type {
  ImagePart, FilePart, ModelCallWarning, ModelMessage, ModelRequest, ProviderMetadata, ToolChoice, UserContentPart,
} from '../types.js';
import { isToolContent } from '../types.js';
import type { JsonValue } from '../../agent/json.js';
import type {
  AISDKSpecVersion, CallOptions, PromptFilePart, PromptMessage, PromptReasoningPart, PromptTextPart, PromptToolCallPart,
  PromptToolResultPart, ToolChoiceOption, ToolOutputContentPart, ToolResultOutput, V4FileData,
} from './spec.js';

/** Where a text part's own metadata is kept in a turn's providerMetadata, so the next request can send it back. */
export const TEXT_PART_METADATA = 'cairnTextPart';

export interface RequestContext {
  version: AISDKSpecVersion;
  /** The key the AI SDK provider reads in providerOptions and writes in providerMetadata. */
  providerKey: string;
}

/** Providers whose prompt cache works without being asked (so `promptCaching` needs no warning). */
const AUTOMATIC_CACHING = new Set(['openai']);
/** Providers whose AI SDK options take Cairn's effort levels as they are, under `reasoningEffort` (v2 and v3). */
const REASONING_EFFORT_OPTION = new Set(['openai']);

function bytesOf(base64: string): Uint8Array {
  const binary = atob(base64);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

function dataOf(part: ImagePart | FilePart, version: AISDKSpecVersion): PromptFilePart['data'] {
  if (part.data !== undefined) {
    const bytes = bytesOf(part.data);
    return version === 'v4' ? { type: 'data', data: bytes } : bytes;
  }
  const url = new URL(part.url ?? '');
  return version === 'v4' ? { type: 'url', url } : url;
}

/** An image without a media type: v2 and v3 take the `image/*` wildcard, v4 the top-level segment. */
function mediaTypeOf(part: ImagePart | FilePart, version: AISDKSpecVersion): string {
  if (part.mediaType) return part.mediaType;
  return version === 'v4' ? 'image' : 'image/*';
}

function userPart(part: UserContentPart, version: AISDKSpecVersion): PromptTextPart | PromptFilePart {
  if (part.type === 'text') return { type: 'text', text: part.text };
  return {
    type: 'file',
    data: dataOf(part, version),
    mediaType: mediaTypeOf(part, version),
    ...(part.type === 'file' && part.filename !== undefined ? { filename: part.filename } : {}),
  };
}

/** Only the provider's own entry: the options of a part go to that provider alone. */
function ownOptions(metadata: ProviderMetadata | undefined, key: string): PromptTextPart['providerOptions'] | undefined {
  const own = metadata?.[key];
  return own !== null && typeof own === 'object' && !Array.isArray(own) ? { [key]: own } : undefined;
}

function toolOutputPart(part: UserContentPart, version: AISDKSpecVersion, warnings: ModelCallWarning[]): ToolOutputContentPart {
  if (part.type === 'text') return { type: 'text', text: part.text };
  const mediaType = mediaTypeOf(part, version);
  if (version === 'v4') {
    return { type: 'file', data: dataOf(part, version) as V4FileData, mediaType, ...(part.type === 'file' && part.filename ? { filename: part.filename } : {}) };
  }
  if (part.data !== undefined) {
    if (version === 'v2') return { type: 'media', data: part.data, mediaType };
    return part.type === 'image'
      ? { type: 'image-data', data: part.data, mediaType }
      : { type: 'file-data', data: part.data, mediaType, ...(part.filename ? { filename: part.filename } : {}) };
  }
  if (version === 'v3') return part.type === 'image' ? { type: 'image-url', url: part.url! } : { type: 'file-url', url: part.url!, mediaType };
  // v2 tool outputs hold no URLs: the model gets the address as text.
  warnings.push({ type: 'other', message: `A tool result's ${part.type} by URL was sent as text: the AI SDK v2 spec takes only inline media in tool results.` });
  return { type: 'text', text: part.url! };
}

function toolOutput(message: Extract<ModelMessage, { role: 'tool' }>, version: AISDKSpecVersion, warnings: ModelCallWarning[]): ToolResultOutput {
  const { content } = message;
  if (isToolContent(content)) {
    if (message.isError) {
      return { type: 'error-text', value: content.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n') };
    }
    return { type: 'content', value: content.parts.map((p) => toolOutputPart(p, version, warnings)) };
  }
  if (typeof content === 'string') return { type: message.isError ? 'error-text' : 'text', value: content };
  return { type: message.isError ? 'error-json' : 'json', value: content };
}

function assistantContent(message: Extract<ModelMessage, { role: 'assistant' }>, key: string): Array<PromptTextPart | PromptReasoningPart | PromptToolCallPart> {
  const out: Array<PromptTextPart | PromptReasoningPart | PromptToolCallPart> = [];
  for (const part of message.reasoning ?? []) {
    const providerOptions = ownOptions(part.providerMetadata, key);
    if (providerOptions) out.push({ type: 'reasoning', text: part.text, providerOptions });
  }
  const own = message.providerMetadata?.[key];
  const textMetadata = own !== null && typeof own === 'object' && !Array.isArray(own) ? own[TEXT_PART_METADATA] : undefined;
  if (message.content !== '') {
    const providerOptions = textMetadata !== null && typeof textMetadata === 'object' && !Array.isArray(textMetadata)
      ? { [key]: textMetadata }
      : undefined;
    out.push({ type: 'text', text: message.content, ...(providerOptions ? { providerOptions } : {}) });
  }
  for (const call of message.toolCalls ?? []) {
    const providerOptions = ownOptions(call.providerMetadata, key);
    out.push({ type: 'tool-call', toolCallId: call.toolCallId, toolName: call.toolName, input: call.args, ...(providerOptions ? { providerOptions } : {}) });
  }
  // A turn that said nothing is still a turn: keep it, so the roles alternate as they did.
  return out.length > 0 ? out : [{ type: 'text', text: '' }];
}

export function toPrompt(messages: readonly ModelMessage[], ctx: RequestContext, warnings: ModelCallWarning[]): PromptMessage[] {
  const prompt: PromptMessage[] = [];
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        prompt.push({ role: 'system', content: message.content });
        break;
      case 'user':
        prompt.push({
          role: 'user',
          content: typeof message.content === 'string'
            ? [{ type: 'text', text: message.content }]
            : message.content.map((part) => userPart(part, ctx.version)),
        });
        break;
      case 'assistant':
        prompt.push({ role: 'assistant', content: assistantContent(message, ctx.providerKey) });
        break;
      case 'tool': {
        const part: PromptToolResultPart = {
          type: 'tool-result', toolCallId: message.toolCallId, toolName: message.toolName, output: toolOutput(message, ctx.version, warnings),
        };
        // The results of one turn travel together, as the AI SDK itself sends them.
        const last = prompt[prompt.length - 1];
        if (last?.role === 'tool') last.content.push(part);
        else prompt.push({ role: 'tool', content: [part] });
        break;
      }
    }
  }
  return prompt;
}

function toolChoiceOf(choice: ToolChoice): ToolChoiceOption {
  return typeof choice === 'string' ? { type: choice } : { type: 'tool', toolName: choice.toolName };
}

/** The call options for one request, and the warnings about what the spec version cannot carry. */
export function toCallOptions(request: ModelRequest, ctx: RequestContext): { options: CallOptions; warnings: ModelCallWarning[] } {
  const warnings: ModelCallWarning[] = [];
  const options: CallOptions = { prompt: toPrompt(request.messages, ctx, warnings) };
  if (request.tools.length > 0) {
    options.tools = request.tools.map((tool) => ({
      type: 'function',
      name: tool.name,
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      inputSchema: tool.parameters,
    }));
    options.toolChoice = toolChoiceOf(request.toolChoice);
  }
  const settings = request.settings ?? {};
  if (settings.temperature !== undefined) options.temperature = settings.temperature;
  if (settings.topP !== undefined) options.topP = settings.topP;
  if (settings.maxOutputTokens !== undefined) options.maxOutputTokens = settings.maxOutputTokens;
  if (request.responseFormat) {
    const { schema, name } = request.responseFormat;
    options.responseFormat = { type: 'json', ...(schema !== undefined ? { schema } : {}), ...(name !== undefined ? { name } : {}) };
  }
  const providerOptions: Record<string, Record<string, unknown>> = { ...(request.providerOptions ?? {}) };
  const { providerKey: key } = ctx;
  if (settings.effort !== undefined) {
    if (ctx.version === 'v4') {
      options.reasoning = settings.effort;
    } else if (REASONING_EFFORT_OPTION.has(key)) {
      // The caller's own providerOptions win over the run's effort.
      providerOptions[key] = { reasoningEffort: settings.effort as JsonValue, ...providerOptions[key] };
    } else {
      warnings.push({
        type: 'unsupported-setting', setting: 'effort',
        details: `The AI SDK ${ctx.version} spec has no effort setting; pass the provider's own option in providerOptions.${key}.`,
      });
    }
  }
  if (settings.promptCaching && !AUTOMATIC_CACHING.has(key)) {
    warnings.push({
      type: 'unsupported-setting', setting: 'promptCaching',
      details: `The AI SDK spec has no prompt-caching setting; pass the provider's cache options in providerOptions.${key}.`,
    });
  }
  if (Object.keys(providerOptions).length > 0) options.providerOptions = providerOptions;
  if (request.signal) options.abortSignal = request.signal;
  return { options, warnings };
}

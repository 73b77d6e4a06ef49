/**
 * One Chat Completions model (POST {baseURL}/chat/completions). `openai.chat`
 * and every `createOpenAICompatible` provider build their models here, each
 * with its own configuration: the same mapping, two ways to authenticate.
 */
import type { LanguageModel } from '../../models/types.js';
import { chatBody, type ChatWireOptions } from './chat-request.js';
import { chatResponse, chatStreamParts } from './chat-response.js';
import { createWireModel, type WireModelConfig } from './wire-model.js';

export interface ChatModelConfig extends ChatWireOptions, WireModelConfig {}

export function createChatModel(config: ChatModelConfig): LanguageModel {
  return createWireModel(config, {
    path: 'chat/completions',
    protocol: 'chat',
    body: (request) => chatBody(request, config),
    streamFields: { stream: true, stream_options: { include_usage: true } },
    response: chatResponse,
    stream: chatStreamParts,
  });
}

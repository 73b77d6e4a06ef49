/**
 * One Chat Completions model (POST {baseURL}/chat/completions). `openai.chat`
 * and every `createOpenAICompatible` provider build their models here, each
 * with its own configuration: the same mapping, two ways to authenticate.
 */
import type { LanguageModel, ModelRequest, ModelResponse, ModelStreamPart } from '../../models/types.js';
import { postJson, readJson, type FetchFunction } from '../utils/http.js';
import { readSse } from '../utils/sse.js';
import { chatBody, type ChatWireOptions } from './chat-request.js';
import { chatResponse, chatStreamParts } from './chat-response.js';
import { errorMessageOf, holdHead, joinUrl } from './common.js';

export interface ChatModelConfig extends ChatWireOptions {
  baseURL: string;
  /** The headers of one call; reads the API key, so a missing key throws at the call. */
  headers: () => Record<string, string | undefined>;
  /** Whether a key is at hand, for `doctor`. */
  keyStatus?: LanguageModel['keyStatus'];
  fetch?: FetchFunction;
}

export function createChatModel(config: ChatModelConfig): LanguageModel {
  const url = joinUrl(config.baseURL, 'chat/completions');
  const post = (request: ModelRequest, body: unknown) => postJson({
    provider: config.provider,
    url,
    headers: config.headers(),
    body,
    ...(request.signal ? { signal: request.signal } : {}),
    ...(config.fetch ? { fetch: config.fetch } : {}),
    errorMessage: errorMessageOf,
  });

  return {
    specificationVersion: 'cairn-model-1',
    provider: config.provider,
    modelId: config.modelId,
    ...(config.keyStatus ? { keyStatus: config.keyStatus } : {}),
    protocol: 'chat',

    async doGenerate(request: ModelRequest): Promise<ModelResponse> {
      const { body, warnings } = chatBody(request, config);
      const response = await post(request, body);
      const json = await readJson(response, { provider: config.provider, url, ...(request.signal ? { signal: request.signal } : {}) });
      return chatResponse(json, config.provider, url, warnings);
    },

    async *doStream(request: ModelRequest): AsyncIterable<ModelStreamPart> {
      const { body, warnings } = chatBody(request, config);
      // Set after the provider options, which cannot turn the stream off.
      const response = await post(request, { ...body, stream: true, stream_options: { include_usage: true } });
      yield* holdHead(chatStreamParts(readSse(response, request.signal), config.provider, url, warnings));
    },
  };
}

/** One Responses model (POST {baseURL}/responses). */
import type { LanguageModel, ModelRequest, ModelResponse, ModelStreamPart } from '../../models/types.js';
import { postJson, readJson, type FetchFunction } from '../utils/http.js';
import { readSse } from '../utils/sse.js';
import { errorMessageOf, holdHead, joinUrl } from '../openai-compatible/common.js';
import { responsesBody, type ResponsesWireOptions } from './responses-request.js';
import { responsesResponse, responsesStreamParts } from './responses-response.js';

export interface ResponsesModelConfig extends ResponsesWireOptions {
  provider: string;
  baseURL: string;
  /** The headers of one call; reads the API key, so a missing key throws at the call. */
  headers: () => Record<string, string | undefined>;
  /** Whether a key is at hand, for `doctor`. */
  keyStatus?: LanguageModel['keyStatus'];
  fetch?: FetchFunction;
}

export function createResponsesModel(config: ResponsesModelConfig): LanguageModel {
  const url = joinUrl(config.baseURL, 'responses');
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
    protocol: 'responses',

    async doGenerate(request: ModelRequest): Promise<ModelResponse> {
      const { body, warnings } = responsesBody(request, config);
      const response = await post(request, body);
      const json = await readJson(response, { provider: config.provider, url, ...(request.signal ? { signal: request.signal } : {}) });
      return responsesResponse(json, config.provider, url, warnings);
    },

    async *doStream(request: ModelRequest): AsyncIterable<ModelStreamPart> {
      const { body, warnings } = responsesBody(request, config);
      const response = await post(request, { ...body, stream: true });
      yield* holdHead(responsesStreamParts(readSse(response, request.signal), config.provider, url, warnings));
    },
  };
}

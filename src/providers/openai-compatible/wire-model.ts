/**
 * The shell both OpenAI wires share (Responses and Chat Completions): one POST
 * per call to `{baseURL}/<path>`, the answer read as JSON or as SSE, the wire's
 * own mapping in between. Each wire gives its request builder and readers.
 */
import type { LanguageModel, ModelCallWarning, ModelRequest, ModelResponse, ModelStreamPart } from '../../models/types.js';
import { postJson, readJson, type FetchFunction } from '../utils/http.js';
import type { TransportTimeouts } from '../utils/transport.js';
import { readSse, type SseEvent } from '../utils/sse.js';
import { errorMessageOf, holdHead, joinUrl } from './common.js';

export interface WireModelConfig {
  provider: string;
  modelId: string;
  baseURL: string;
  /** The headers of one call; reads the API key, so a missing key throws at the call. */
  headers: () => Record<string, string | undefined>;
  /** Whether a key is at hand, for `doctor`. */
  keyStatus?: LanguageModel['keyStatus'];
  fetch?: FetchFunction;
  /** The limits on a silent server (checked by the provider's factory). */
  timeouts?: TransportTimeouts;
}

export interface Wire {
  path: string;
  protocol: string;
  body(request: ModelRequest): { body: Record<string, unknown>; warnings: ModelCallWarning[] };
  /** Fields a streamed request adds after the provider options, which cannot turn the stream off. */
  streamFields: Record<string, unknown>;
  response(json: unknown, provider: string, url: string, warnings: ModelCallWarning[]): ModelResponse;
  stream(events: AsyncIterable<SseEvent>, provider: string, url: string, warnings: ModelCallWarning[]): AsyncIterable<ModelStreamPart>;
}

export function createWireModel(config: WireModelConfig, wire: Wire): LanguageModel {
  const url = joinUrl(config.baseURL, wire.path);
  const post = (request: ModelRequest, body: unknown) => postJson({
    provider: config.provider,
    url,
    headers: config.headers(),
    body,
    ...(request.signal ? { signal: request.signal } : {}),
    ...(config.fetch ? { fetch: config.fetch } : {}),
    ...(config.timeouts ? { timeouts: config.timeouts } : {}),
    errorMessage: errorMessageOf,
  });

  return {
    specificationVersion: 'cairn-model-1',
    provider: config.provider,
    modelId: config.modelId,
    ...(config.keyStatus ? { keyStatus: config.keyStatus } : {}),
    protocol: wire.protocol,

    async doGenerate(request: ModelRequest): Promise<ModelResponse> {
      const { body, warnings } = wire.body(request);
      const response = await post(request, body);
      const json = await readJson(response, { provider: config.provider, url, ...(request.signal ? { signal: request.signal } : {}) });
      return wire.response(json, config.provider, url, warnings);
    },

    async *doStream(request: ModelRequest): AsyncIterable<ModelStreamPart> {
      const { body, warnings } = wire.body(request);
      const response = await post(request, { ...body, ...wire.streamFields });
      const events = readSse(response, request.signal, { provider: config.provider, url });
      yield* holdHead(wire.stream(events, config.provider, url, warnings));
    },
  };
}

/**
 * A Gemini model over generateContent and streamGenerateContent (SSE). The
 * API key goes in the `x-goog-api-key` header only, never in the URL.
 */
import { APICallError } from '../../errors/index.js';
import {
  MODEL_SPEC_VERSION, type LanguageModel, type ModelRequest, type ModelResponse, type ModelStreamPart,
} from '../../models/types.js';
import {
  eventJson, invalidResponse, keyStatusOf, loadApiKey, postJson, readJson, readSse, type FetchFunction, type TransportTimeouts,
} from '../utils/index.js';
import type { GeminiErrorBody, GeminiResponse } from './google-api.js';
import { errorMessage, PROVIDER, streamError, withRetryInfo } from './google-error.js';
import { buildRequest } from './google-request.js';
import { finishOf, finishReasonOf, TurnReader, usageOf } from './google-response.js';

/** Environment variables tried in order when no apiKey is passed. */
export const GOOGLE_API_KEY_ENV_VARS = ['GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GOOGLE_GENERATIVE_AI_API_KEY'] as const;

export interface GoogleModelConfig {
  baseURL: string;
  apiKey?: string;
  headers?: Record<string, string>;
  fetch?: FetchFunction;
  timeouts?: TransportTimeouts;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export class GoogleLanguageModel implements LanguageModel {
  readonly specificationVersion = MODEL_SPEC_VERSION;
  readonly provider = PROVIDER;
  readonly protocol = 'generate-content';

  constructor(readonly modelId: string, private readonly config: GoogleModelConfig) {}

  /** Whether a key is at hand (passed, or in one of the variables of `env`), without a network call; for `doctor`. */
  keyStatus(env: Record<string, string | undefined>) {
    return keyStatusOf(this.config.apiKey, GOOGLE_API_KEY_ENV_VARS)(env);
  }

  /** `{baseURL}/models/{id}:{method}`; an id that already names its collection (`tunedModels/x`) is kept. */
  private url(method: string): string {
    const path = this.modelId.includes('/') ? this.modelId : `models/${this.modelId}`;
    return `${this.config.baseURL}/${path}:${method}`;
  }

  private async post(url: string, body: unknown, signal: AbortSignal | undefined): Promise<Response> {
    const apiKey = loadApiKey({ apiKey: this.config.apiKey, envVars: GOOGLE_API_KEY_ENV_VARS, provider: PROVIDER });
    try {
      return await postJson({
        provider: PROVIDER,
        url,
        headers: { ...this.config.headers, 'x-goog-api-key': apiKey },
        body,
        signal,
        fetch: this.config.fetch,
        timeouts: this.config.timeouts,
        errorMessage,
      });
    } catch (error) {
      throw withRetryInfo(error);
    }
  }

  async doGenerate(request: ModelRequest): Promise<ModelResponse> {
    const { body, warnings } = buildRequest(this.modelId, request);
    const url = this.url('generateContent');
    const response = await this.post(url, body, request.signal);
    const json = await readJson(response, { provider: PROVIDER, url, signal: request.signal });
    if (!isObject(json)) throw invalidResponse(PROVIDER, url, 'a body that is not a GenerateContentResponse', json);
    const answer = json as GeminiResponse;
    const reader = new TurnReader();
    reader.read(answer.candidates?.[0]?.content?.parts ?? []);
    reader.end();
    const raw = finishOf(answer);
    return {
      text: reader.text,
      toolCalls: reader.toolCalls,
      finishReason: raw === undefined ? 'other' : finishReasonOf(raw, reader.toolCalls.length > 0),
      usage: usageOf(answer.usageMetadata),
      ...(reader.reasoning.length > 0 ? { reasoning: reader.reasoning } : {}),
      response: {
        ...(answer.responseId !== undefined ? { id: answer.responseId } : {}),
        ...(answer.modelVersion !== undefined ? { modelId: answer.modelVersion } : {}),
      },
      ...(warnings.length > 0 ? { warnings } : {}),
    };
  }

  async *doStream(request: ModelRequest): AsyncGenerator<ModelStreamPart> {
    const { body, warnings } = buildRequest(this.modelId, request);
    const url = this.url('streamGenerateContent?alt=sse');
    const response = await this.post(url, body, request.signal);
    const reader = new TurnReader();
    let started = false;
    let raw: string | undefined;
    let usage: GeminiResponse['usageMetadata'];
    for await (const event of readSse(response, request.signal, { provider: PROVIDER, url })) {
      // An event with no data is a keep-alive; one that is not a JSON object is a broken answer.
      const chunk = eventJson(event.data, PROVIDER, url);
      if (!chunk) continue;
      if (isObject(chunk.error)) throw streamError(chunk as GeminiErrorBody, url, event.data);
      const answer = chunk as GeminiResponse;
      if (!started) {
        started = true;
        yield {
          type: 'response-metadata',
          ...(answer.responseId !== undefined ? { id: answer.responseId } : {}),
          ...(answer.modelVersion !== undefined ? { modelId: answer.modelVersion } : {}),
        };
        if (warnings.length > 0) yield { type: 'warnings', warnings };
      }
      yield* reader.read(answer.candidates?.[0]?.content?.parts ?? []);
      // Counts may come with every chunk; the last ones are the turn's.
      if (answer.usageMetadata) usage = answer.usageMetadata;
      raw = finishOf(answer) ?? raw;
    }
    yield* reader.end();
    if (raw === undefined) {
      throw new APICallError({
        message: `The ${PROVIDER} stream ended early, before its finish reason.`,
        provider: PROVIDER,
        url,
        isRetryable: true,
      });
    }
    yield { type: 'finish', finishReason: finishReasonOf(raw, reader.toolCalls.length > 0), usage: usageOf(usage) };
  }
}

/** One Claude model over the Messages API: a complete turn, or the same turn streamed. */
import type { LanguageModel, ModelRequest, ModelResponse, ModelStreamPart } from '../../models/types.js';
import { invalidResponse, loadApiKey, postJson, readJson, type FetchFunction, type ResolvedTimeouts } from '../utils/index.js';
import type { MessagesResponse } from './anthropic-api.js';
import { anthropicErrorMessage } from './anthropic-error.js';
import { buildRequestBody } from './anthropic-request.js';
import { responseOf } from './anthropic-response.js';
import { streamParts } from './anthropic-stream.js';

/** What a model needs of its provider's settings, normalized once by the factory. */
export interface AnthropicModelConfig {
  apiKey: string | undefined;
  baseURL: string;
  headers: Record<string, string | undefined>;
  version: string;
  fetch: FetchFunction | undefined;
  timeouts: ResolvedTimeouts;
}

export const ANTHROPIC_ENV_VARS = ['ANTHROPIC_API_KEY'] as const;

export class AnthropicMessagesModel implements LanguageModel {
  readonly specificationVersion = 'cairn-model-1' as const;
  readonly provider = 'anthropic';
  readonly protocol = 'messages';

  constructor(readonly modelId: string, private readonly config: AnthropicModelConfig) {}

  /** Whether a key is at hand (passed, or in ANTHROPIC_API_KEY of `env`), without a network call; for `doctor`. */
  keyStatus(env: Record<string, string | undefined>): { present: boolean; envVars: readonly string[]; required: boolean } {
    const present = (this.config.apiKey !== undefined && this.config.apiKey !== '')
      || ANTHROPIC_ENV_VARS.some((name) => typeof env[name] === 'string' && env[name] !== '');
    return { present, envVars: ANTHROPIC_ENV_VARS, required: true };
  }

  private get url(): string {
    return `${this.config.baseURL}/messages`;
  }

  private post(body: unknown, signal: AbortSignal | undefined): Promise<Response> {
    // Read at each call, so a missing key fails the first call, not the factory.
    const apiKey = loadApiKey({ apiKey: this.config.apiKey, envVars: ANTHROPIC_ENV_VARS, provider: 'anthropic' });
    return postJson({
      provider: 'anthropic',
      url: this.url,
      headers: { ...this.config.headers, 'x-api-key': apiKey, 'anthropic-version': this.config.version },
      body,
      ...(signal ? { signal } : {}),
      ...(this.config.fetch ? { fetch: this.config.fetch } : {}),
      timeouts: this.config.timeouts,
      errorMessage: anthropicErrorMessage,
    });
  }

  async doGenerate(request: ModelRequest): Promise<ModelResponse> {
    const { body, warnings } = buildRequestBody(this.modelId, request, false);
    const response = await this.post(body, request.signal);
    const answer = await readJson(response, { provider: 'anthropic', url: this.url, ...(request.signal ? { signal: request.signal } : {}) });
    if (typeof answer !== 'object' || answer === null || !Array.isArray((answer as MessagesResponse).content)) {
      throw invalidResponse('anthropic', this.url, 'a message without a content array', answer);
    }
    return responseOf(answer as MessagesResponse, warnings);
  }

  async *doStream(request: ModelRequest): AsyncGenerator<ModelStreamPart> {
    const { body, warnings } = buildRequestBody(this.modelId, request, true);
    const response = await this.post(body, request.signal);
    yield* streamParts(response, { url: this.url, warnings, ...(request.signal ? { signal: request.signal } : {}) });
  }
}

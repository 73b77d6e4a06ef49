/**
 * Vercel AI SDK language models as Cairn models: `fromAISDK(openai.chat('gpt-4o'))`
 * is a Cairn LanguageModel the engine calls like its own providers, with the
 * same errors, usage, reasoning round trip and stream parts.
 */
import type { LanguageModel, ModelRequest, ModelResponse, ModelStreamPart } from '../types.js';
import { MODEL_SPEC_VERSION } from '../types.js';
import { InvalidOptionsError } from '../../errors/index.js';
import { toCairnError } from './errors.js';
import { toCallOptions, type RequestContext } from './request.js';
import { toModelResponse } from './response.js';
import { AI_SDK_SPEC_VERSIONS, type AISDKLanguageModel, type CallableModel, type GenerateResult } from './spec.js';
import { mapStream } from './stream.js';

export interface FromAISDKOptions {
  /**
   * The provider name Cairn uses for prices, profiles, the breaker key and errors.
   * @default the AI SDK model's provider before its first dot (`openai.responses` → `openai`)
   */
  provider?: string;
  /**
   * The wire, for the run's records.
   * @default what follows the first dot of the AI SDK provider (`openai.responses` → `responses`), or none
   */
  protocol?: string;
  /**
   * The key the AI SDK provider reads in `providerOptions` and writes in `providerMetadata`
   * (reasoning parts and tool calls are sent back only when they carry it). Set it for
   * providers whose key is not their id's first segment (Amazon Bedrock's `bedrock`, for example).
   * @default the provider before its first dot
   */
  providerKey?: string;
}

/**
 * Whether `value` looks like an AI SDK language model of a spec version Cairn
 * adapts (`v2`, `v3`, `v4`): a provider, a model id, `doGenerate` and `doStream`.
 * The engine uses it to accept such a model where a Cairn model is expected.
 */
export function isAISDKModel(value: unknown): value is AISDKLanguageModel {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false;
  // Read through the object, not its own keys: AI SDK models are class instances with getters.
  const model = value as Record<string, unknown>;
  try {
    return AI_SDK_SPEC_VERSIONS.includes(model.specificationVersion as never)
      && typeof model.provider === 'string'
      && typeof model.modelId === 'string'
      && typeof model.doGenerate === 'function'
      && typeof model.doStream === 'function';
  } catch {
    // A getter that throws: not a model anyone can call.
    return false;
  }
}

function names(model: AISDKLanguageModel, options: FromAISDKOptions): { provider: string; protocol?: string; providerKey: string } {
  const dot = model.provider.indexOf('.');
  const head = dot === -1 ? model.provider : model.provider.slice(0, dot);
  const tail = dot === -1 ? undefined : model.provider.slice(dot + 1);
  const protocol = options.protocol ?? tail;
  return { provider: options.provider ?? head, ...(protocol ? { protocol } : {}), providerKey: options.providerKey ?? head };
}

/**
 * Adapts an AI SDK language model (`LanguageModelV2`, `V3` or `V4`, as any AI
 * SDK provider package returns it) to Cairn's model spec. A Cairn model is
 * returned as it is.
 *
 * @example
 * ```ts
 * import { createOpenAI } from '@ai-sdk/openai';
 * import { runAgent } from 'cairn/agent';
 * import { fromAISDK } from 'cairn/models';
 *
 * const openai = createOpenAI({ apiKey: process.env.OPENAI_API_KEY });
 * const result = await runAgent({ model: fromAISDK(openai.chat('gpt-4o')), prompt: 'Say hello.' });
 * ```
 */
export function fromAISDK(model: AISDKLanguageModel | LanguageModel, options: FromAISDKOptions = {}): LanguageModel {
  if ((model as LanguageModel)?.specificationVersion === MODEL_SPEC_VERSION) return model as LanguageModel;
  if (!isAISDKModel(model)) {
    const version = (model as { specificationVersion?: unknown } | null)?.specificationVersion;
    throw new InvalidOptionsError(
      `fromAISDK takes an AI SDK language model of spec version ${AI_SDK_SPEC_VERSIONS.join(', ')}`
      + ` (with provider, modelId, doGenerate and doStream); got ${version === undefined ? 'something else' : `spec version ${JSON.stringify(version)}`}.`,
    );
  }
  const inner = model as unknown as CallableModel;
  const { provider, protocol, providerKey } = names(model, options);
  const ctx: RequestContext = { version: model.specificationVersion, providerKey };
  return {
    specificationVersion: MODEL_SPEC_VERSION,
    provider,
    modelId: model.modelId,
    ...(protocol ? { protocol } : {}),

    async doGenerate(request: ModelRequest): Promise<ModelResponse> {
      const { options: callOptions, warnings } = toCallOptions(request, ctx);
      let result: GenerateResult;
      try {
        result = await inner.doGenerate(callOptions);
      } catch (error) {
        throw toCairnError(error, { provider, signal: request.signal });
      }
      return toModelResponse(result, providerKey, warnings);
    },

    async *doStream(request: ModelRequest): AsyncIterable<ModelStreamPart> {
      const { options: callOptions, warnings } = toCallOptions(request, ctx);
      let stream: ReadableStream;
      try {
        ({ stream } = await inner.doStream(callOptions));
      } catch (error) {
        throw toCairnError(error, { provider, signal: request.signal });
      }
      yield* mapStream(stream, { provider, providerKey, warnings, signal: request.signal });
    },
  };
}

/**
 * Which objects a run takes as a model: a Cairn model (the spec in types.ts)
 * or a Vercel AI SDK language model, adapted. Anything else is refused with
 * `invalid_options` before anything is read or written, with a message that
 * says what is missing, so no model however broken can fail a run later with
 * an unhandled rejection.
 */
import { InvalidOptionsError } from '../errors/index.js';
import { fromAISDK, isAISDKModel } from './ai-sdk/index.js';
import { MODEL_SPEC_VERSION, type LanguageModel } from './types.js';

/** Reads a property of something the caller passed; a getter that throws reads as the error. */
function read(value: object, key: string): { ok: true; value: unknown } | { ok: false; error: unknown } {
  try {
    return { ok: true, value: (value as Record<string, unknown>)[key] };
  } catch (error) {
    return { ok: false, error };
  }
}

const adapted = new WeakMap<object, LanguageModel>();

/** What is wrong with a value passed as a Cairn model, or null when it is one. */
export function cairnModelIssues(value: unknown): string[] | null {
  if (value === null || typeof value !== 'object') return [`an object (got ${value === null ? 'null' : typeof value})`];
  const issues: string[] = [];
  const version = read(value, 'specificationVersion');
  if (!version.ok || version.value !== MODEL_SPEC_VERSION) {
    issues.push(`specificationVersion '${MODEL_SPEC_VERSION}' (got ${version.ok ? JSON.stringify(version.value) ?? 'undefined' : 'a getter that throws'})`);
  }
  for (const key of ['provider', 'modelId']) {
    const field = read(value, key);
    if (!field.ok || typeof field.value !== 'string' || field.value === '') issues.push(`a non-empty string ${key}`);
  }
  const generate = read(value, 'doGenerate');
  if (!generate.ok || typeof generate.value !== 'function') issues.push('a doGenerate function');
  const stream = read(value, 'doStream');
  if (!stream.ok || (stream.value !== undefined && typeof stream.value !== 'function')) issues.push('doStream, when present, a function');
  return issues.length > 0 ? issues : null;
}

/** Other kinds of model object a run takes, each with how it becomes a Cairn model. */
const adapters: Array<{ accepts(value: unknown): boolean; adapt(value: unknown): LanguageModel }> = [
  { accepts: isAISDKModel, adapt: (value) => fromAISDK(value as Parameters<typeof fromAISDK>[0]) },
];

/**
 * The Cairn model for `value`: itself when it is one, the adapted model for an
 * AI SDK model (the same adapted object each time), else InvalidOptionsError.
 * `path` names the option in the message (`model`, `fallbackModels[1]`).
 */
export function toCairnModel(value: unknown, path = 'model'): LanguageModel {
  const issues = cairnModelIssues(value);
  if (issues === null) return value as LanguageModel;
  for (const adapter of adapters) {
    let accepts = false;
    try {
      accepts = adapter.accepts(value);
    } catch {
      accepts = false;
    }
    if (!accepts) continue;
    const object = value as object;
    let model = adapted.get(object);
    if (!model) {
      model = adapter.adapt(value);
      adapted.set(object, model);
    }
    return model;
  }
  throw new InvalidOptionsError(
    `${path} is not a model Cairn recognises: it needs ${issues.join(', ')}. Pass a Cairn model (cairn/openai, cairn/anthropic, cairn/google, cairn/openai-compatible, createMockModel) or a Vercel AI SDK language model.`,
  );
}

/** `provider:modelId`, as prices, the breaker and the binding key a model. */
export const modelKey = (model: Pick<LanguageModel, 'provider' | 'modelId'>): string => `${model.provider}:${model.modelId}`;

/** The provider and model id of a {@link modelKey} (a key without a provider is a bare model id). */
export function parseModelKey(key: string): { provider: string; modelId: string } {
  const at = key.indexOf(':');
  return at < 0 ? { provider: '', modelId: key } : { provider: key.slice(0, at), modelId: key.slice(at + 1) };
}

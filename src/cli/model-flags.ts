/**
 * The model flags `cairn run`, `cairn resume` and `cairn doctor` share:
 * `--model`, `--fallback`, the endpoint flags and the call limits.
 */
import { str, strs, UsageError, wholeNumber, type OptionSpecs, type Parsed } from './args.js';
import { checkEndpointFlags, parseModelArg, withEndpoints, type EndpointFlags, type ModelSource } from './model-spec.js';

export const MODEL_OPTIONS = {
  model: { type: 'string' },
  fallback: { type: 'string', multiple: true },
  'base-url': { type: 'string' },
  'provider-name': { type: 'string' },
  'api-key-env': { type: 'string' },
  'max-retries': { type: 'string' },
  'model-timeout': { type: 'string' },
} as const satisfies OptionSpecs;

export interface ModelFlags {
  /** Absent when `--model` was not given. */
  model?: ModelSource;
  /** Present when `--fallback` was given at least once. */
  fallbacks?: ModelSource[];
  maxRetries?: number;
  modelTimeoutMs?: number;
}

const MAX_RETRIES = 100;
const MAX_TIMEOUT_MS = 86_400_000;

/** The endpoint flags a recorded model was started with. */
function endpointsOf(source: ModelSource): EndpointFlags {
  if (source.kind !== 'provider') return {};
  return {
    ...(source.baseURL !== undefined ? { baseURL: source.baseURL } : {}),
    ...(source.providerName !== undefined ? { providerName: source.providerName } : {}),
    ...(source.apiKeyEnv !== undefined ? { apiKeyEnv: source.apiKeyEnv } : {}),
  };
}

/**
 * Reads and checks the model flags; every mistake is a UsageError, before
 * anything is opened. `recorded` is the model a resume goes on with when
 * `--model` is not given: `--fallback` values take its endpoint then.
 */
export function readModelFlags(parsed: Parsed, cwd: string, recorded?: ModelSource): ModelFlags {
  const endpoints = checkEndpointFlags({
    baseURL: str(parsed, 'base-url'),
    providerName: str(parsed, 'provider-name'),
    apiKeyEnv: str(parsed, 'api-key-env'),
  });
  const modelArg = str(parsed, 'model');
  const fallbackArgs = strs(parsed, 'fallback');
  const out: ModelFlags = {};
  const maxRetries = wholeNumber('max-retries', str(parsed, 'max-retries'), 0, MAX_RETRIES);
  if (maxRetries !== undefined) out.maxRetries = maxRetries;
  const modelTimeoutMs = wholeNumber('model-timeout', str(parsed, 'model-timeout'), 1, MAX_TIMEOUT_MS, 'milliseconds');
  if (modelTimeoutMs !== undefined) out.modelTimeoutMs = modelTimeoutMs;
  const fallbacks = fallbackArgs.map((value) => parseModelArg('fallback', value, cwd));
  if (modelArg === undefined) {
    if (Object.keys(endpoints).length > 0) {
      throw new UsageError(`${endpoints.baseURL !== undefined ? '--base-url' : endpoints.providerName !== undefined ? '--provider-name' : '--api-key-env'} goes with --model <provider>:<model>.`);
    }
    if (fallbacks.length > 0) {
      // Without the model, an openai-compatible fallback has no server yet: a resume reads again with the recorded one.
      out.fallbacks = recorded ? withEndpoints(recorded, fallbacks, endpointsOf(recorded)).fallbacks : fallbacks;
    }
    return out;
  }
  const applied = withEndpoints(parseModelArg('model', modelArg, cwd), fallbacks, endpoints);
  out.model = applied.model;
  if (fallbackArgs.length > 0) out.fallbacks = applied.fallbacks;
  return out;
}

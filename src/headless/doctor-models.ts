/**
 * The doctor's checks of the run's models: the model and each of
 * `fallbackModels` (a Cairn model or a Vercel AI SDK model, read through
 * `toCairnModel` as the run reads them), where each one's API key would come
 * from, and the shapes of the options that go with every model call.
 */
import { InvalidOptionsError } from '../errors/index.js';
import { canonicalProvider } from '../models/profiles.js';
import { toCairnModel } from '../models/resolve.js';
import type { KeyStatus, LanguageModel } from '../models/types.js';
import type { Findings } from './doctor-codes.js';
import { isRecord, show } from './doctor-tools.js';

/**
 * The variable each provider's key is usually read from, for models that do
 * not say where they read it (no `keyStatus`). For Google the first is
 * Google's own name; the Vercel AI SDK's name is accepted too.
 */
export const PROVIDER_API_KEY_ENV: Readonly<Record<string, readonly string[]>> = Object.freeze({
  anthropic: ['ANTHROPIC_API_KEY'],
  openai: ['OPENAI_API_KEY'],
  google: ['GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GOOGLE_GENERATIVE_AI_API_KEY'],
});

/** A model the doctor could read, and the option it came from (`model`, `fallbackModels[1]`). */
export interface CheckedModel {
  provider: string;
  modelId: string;
  path: string;
  model: LanguageModel;
}

/** Reads one model as the run would; a value the run would refuse is `model-invalid`. */
function readModel(value: unknown, path: string, out: Findings): CheckedModel | undefined {
  if (value === undefined || value === null) {
    if (path === 'model') out.add('model-missing', 'Pass a model: a provider model, or createMockModel from cairn/testing to run without a key.', 'model');
    else out.add('model-invalid', `${path} is ${String(value)}: each fallback must be a model.`, path);
    return undefined;
  }
  if (typeof value === 'string') {
    out.add('model-invalid', `${path} must be a model object, got ${show(value)}. A model id string is not enough: create the model with its provider.`, path);
    return undefined;
  }
  try {
    const model = toCairnModel(value, path);
    return { provider: model.provider, modelId: model.modelId, path, model };
  } catch (error) {
    if (!(error instanceof InvalidOptionsError)) throw error;
    out.add('model-invalid', `${error.message.replace(/\.$/, '')}.`, path);
    return undefined;
  }
}

/** The model and every fallback the doctor could read, in the run's order. */
export function checkModels(options: Record<string, unknown>, out: Findings): CheckedModel[] {
  const models: CheckedModel[] = [];
  const primary = readModel(options.model, 'model', out);
  if (primary) models.push(primary);
  const fallbacks = options.fallbackModels;
  if (fallbacks === undefined) return models;
  if (!Array.isArray(fallbacks)) {
    out.add('option-invalid', `Set fallbackModels to an array of models, got ${show(fallbacks)}.`, 'fallbackModels');
    return models;
  }
  const seen = new Map<string, string>(primary ? [[`${primary.provider}:${primary.modelId}`, 'model']] : []);
  fallbacks.forEach((value, index) => {
    const checked = readModel(value, `fallbackModels[${index}]`, out);
    if (!checked) return;
    const key = `${checked.provider}:${checked.modelId}`;
    const twin = seen.get(key);
    if (twin) {
      out.add('fallback-duplicate', `${checked.path} is ${key} again, as ${twin} is: a call that failed on it fails over to the same model. Remove it, or pick another model.`, checked.path);
    } else {
      seen.set(key, checked.path);
    }
    models.push(checked);
  });
  return models;
}

/** What a model's own `keyStatus` says, or undefined when it has none (or it threw: then the table decides). */
function ownKeyStatus(model: LanguageModel, env: Record<string, string | undefined>): KeyStatus | undefined {
  if (typeof model.keyStatus !== 'function') return undefined;
  try {
    const status = model.keyStatus(env);
    if (isRecord(status) && typeof status.present === 'boolean' && Array.isArray(status.envVars)) return status;
  } catch {
    // A keyStatus that throws says nothing: fall back to the table.
  }
  return undefined;
}

const isSet = (env: Record<string, unknown>, name: string) => typeof env[name] === 'string' && (env[name] as string).trim() !== '';

/**
 * Where each model's key comes from. `apiKeyEnv` names the variable that holds
 * the model's key (not its fallbacks'): when it is given, that variable is
 * looked at. Otherwise a model that has `keyStatus` says it itself (a key
 * passed to its provider counts, `required: false` needs none), and for the
 * others the provider's usual variables are looked at. Only whether a value is
 * set is looked at: no value ever enters a message.
 */
export function checkApiKeys(models: CheckedModel[], options: Record<string, unknown>, out: Findings): void {
  const env = options.env ?? process.env;
  if (!isRecord(env)) {
    out.add('option-invalid', 'Set env to an object of environment variables (it defaults to process.env).', 'env');
    return;
  }
  const apiKeyEnv = options.apiKeyEnv;
  const apiKeyEnvOk = apiKeyEnv === undefined || (typeof apiKeyEnv === 'string' && apiKeyEnv.trim() !== '');
  if (!apiKeyEnvOk) out.add('option-invalid', `Set apiKeyEnv to the name of an environment variable, got ${show(apiKeyEnv)}.`, 'apiKeyEnv');
  for (const checked of models) {
    const provider = canonicalProvider(checked.provider);
    if (provider === 'mock') continue;
    const primary = checked.path === 'model';
    const lead = primary ? '' : `${checked.path} (${checked.provider}:${checked.modelId}): `;
    if (primary && typeof apiKeyEnv === 'string' && apiKeyEnvOk) {
      if (!isSet(env, apiKeyEnv)) out.add('api-key-missing', `Set ${apiKeyEnv} to your ${checked.provider} API key (apiKeyEnv names it).`, 'apiKeyEnv');
      continue;
    }
    if (primary && !apiKeyEnvOk) continue;
    const status = ownKeyStatus(checked.model, env as Record<string, string | undefined>);
    if (status) {
      if (status.present || status.required === false) continue;
      const which = status.envVars.length === 1 ? status.envVars[0] : `one of ${status.envVars.join(', ')}`;
      const where = status.envVars.length === 0
        ? `Pass the ${checked.provider} API key to its provider (apiKey)`
        : `Set ${which} to your ${checked.provider} API key, or pass apiKey when you create the provider`;
      out.add('api-key-missing', `${lead}${where}.`, primary ? 'env' : checked.path);
      continue;
    }
    const names = PROVIDER_API_KEY_ENV[provider];
    if (!names) {
      out.add('api-key-unchecked', `${lead}Cairn does not know which variable holds a key for provider "${checked.provider}": give the model a keyStatus${primary ? ', or pass apiKeyEnv to have it checked' : ''}.`, primary ? 'apiKeyEnv' : checked.path);
      continue;
    }
    if (names.some((name) => isSet(env, name))) continue;
    const which = names.length === 1 ? names[0] : `one of ${names.join(', ')}`;
    out.add('api-key-missing', `${lead}Set ${which} to your ${checked.provider} API key${primary ? ', or pass apiKeyEnv naming the variable that holds it' : ''}.`, primary ? 'env' : checked.path);
  }
}

const positiveInteger = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= 1;

/** The options sent with every model call: retries, the attempt timeout, the output cap, provider options. */
export function checkCallOptions(options: Record<string, unknown>, models: CheckedModel[], out: Findings): void {
  const { maxRetries, modelTimeoutMs, maxOutputTokens, providerOptions } = options;
  if (maxRetries !== undefined && !(typeof maxRetries === 'number' && Number.isInteger(maxRetries) && maxRetries >= 0)) {
    out.add('option-invalid', `Set maxRetries to a whole number of at least 0 (more attempts on the same model), got ${show(maxRetries)}.`, 'maxRetries');
  }
  if (modelTimeoutMs !== undefined && !positiveInteger(modelTimeoutMs)) {
    out.add('option-invalid', `Set modelTimeoutMs to a positive whole number of milliseconds, got ${show(modelTimeoutMs)}.`, 'modelTimeoutMs');
  }
  if (maxOutputTokens !== undefined && !positiveInteger(maxOutputTokens)) {
    out.add('option-invalid', `Set maxOutputTokens to a positive whole number, got ${show(maxOutputTokens)}.`, 'maxOutputTokens');
  }
  if (providerOptions === undefined) return;
  if (!isRecord(providerOptions)) {
    out.add('option-invalid', `Set providerOptions to an object of objects, one per provider name ({ openai: { ... } }), got ${show(providerOptions)}.`, 'providerOptions');
    return;
  }
  const providers = new Set(models.flatMap((m) => [m.provider, canonicalProvider(m.provider)]));
  for (const [name, entry] of Object.entries(providerOptions)) {
    const path = `providerOptions.${name}`;
    if (!isRecord(entry)) {
      out.add('option-invalid', `Set ${path} to an object of that provider's options, got ${show(entry)}.`, path);
      continue;
    }
    let plain = true;
    try {
      plain = JSON.stringify(entry) !== undefined;
    } catch {
      plain = false;
    }
    if (!plain) out.add('option-invalid', `${path} must be plain JSON: it is sent with every call and stored with the run.`, path);
    else if (models.length > 0 && !providers.has(name)) {
      const known = [...new Set(models.map((m) => m.provider))].join(', ');
      out.add('provider-options-unused', `providerOptions names "${name}", and no model of the run is of that provider (${known}): an adapter reads only its own entry, so nobody reads this one.`, path);
    }
  }
}

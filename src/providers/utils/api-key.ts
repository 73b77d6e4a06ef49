/**
 * API keys: the one passed to a provider's factory, or the conventional
 * environment variable, read at the first call (so a missing key is a typed
 * error there, and a doctor finding before). Every key is registered as a
 * secret, so no message, result or log line can show it.
 */
import { MissingAPIKeyError, registerSecret } from '../../errors/index.js';

export interface ApiKeySource {
  apiKey?: string;
  /** Environment variables tried in order. */
  envVars: readonly string[];
  provider: string;
  env?: Record<string, string | undefined>;
}

/** Registers a key passed to a factory at once, so it is redacted even before the first call. */
export function rememberKey(apiKey: string | undefined): void {
  registerSecret(apiKey);
}

export function loadApiKey(source: ApiKeySource): string {
  if (typeof source.apiKey === 'string' && source.apiKey !== '') {
    registerSecret(source.apiKey);
    return source.apiKey;
  }
  const env = source.env ?? process.env;
  for (const name of source.envVars) {
    const value = env[name];
    if (typeof value === 'string' && value !== '') {
      registerSecret(value);
      return value;
    }
  }
  throw new MissingAPIKeyError(source.provider, source.envVars.join(' or '));
}

/** Like {@link loadApiKey}, for servers that need no key (a local Ollama): undefined when none is set. */
export function loadOptionalApiKey(source: ApiKeySource): string | undefined {
  try {
    return loadApiKey(source);
  } catch {
    return undefined;
  }
}

/** A model's `keyStatus`: whether a key is at hand (passed, or in one of `envVars` of `env`), without a call. */
export function keyStatusOf(apiKey: string | undefined, envVars: readonly string[], required = true) {
  return (env: Record<string, string | undefined>) => ({
    present: (typeof apiKey === 'string' && apiKey !== '') || envVars.some((name) => typeof env[name] === 'string' && env[name] !== ''),
    envVars,
    required,
  });
}

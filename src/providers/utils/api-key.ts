/**
 * API keys: the one passed to a provider's factory, or the conventional
 * environment variable, read at the first call (so a missing key is a typed
 * error there, and a doctor finding before). Every key is registered as a
 * secret, so no message, result or log line can show it.
 */
import { InvalidAPIKeyError, MissingAPIKeyError, registerSecret } from '../../errors/index.js';

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

/**
 * Whether a value can travel as an HTTP header value: visible ASCII, spaces and
 * tabs, and the obs-text bytes 0x80-0xFF; no line break, NUL or other control
 * character (fetch would refuse it with a bare TypeError, or worse, a server
 * would read a second header).
 */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Whether `value` can be sent as an HTTP header value as it is. */
export function isSendableHeaderValue(value: string): boolean {
  return HEADER_VALUE.test(value);
}

function sendable(key: string, provider: string, from: string): string {
  if (!isSendableHeaderValue(key)) throw new InvalidAPIKeyError(provider, from);
  return key;
}

export function loadApiKey(source: ApiKeySource): string {
  if (typeof source.apiKey === 'string' && source.apiKey !== '') {
    registerSecret(source.apiKey);
    return sendable(source.apiKey, source.provider, 'apiKey');
  }
  const env = source.env ?? process.env;
  for (const name of source.envVars) {
    const value = env[name];
    if (typeof value === 'string' && value !== '') {
      registerSecret(value);
      return sendable(value, source.provider, name);
    }
  }
  throw new MissingAPIKeyError(source.provider, source.envVars.join(' or '));
}

/** Like {@link loadApiKey}, for servers that need no key (a local Ollama): undefined when none is set. */
export function loadOptionalApiKey(source: ApiKeySource): string | undefined {
  try {
    return loadApiKey(source);
  } catch (error) {
    // A key that is set but cannot be sent is a mistake to report, not the absence of a key.
    if (InvalidAPIKeyError.isInstance(error)) throw error;
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

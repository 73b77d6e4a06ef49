/**
 * What `--model` and `--fallback` take: a provider model as `<prefix>:<modelId>`
 * (`openai:gpt-5`, `anthropic:claude-sonnet-4-5`, `openai-compatible:llama3.2`),
 * or the path of a scripted model file. A value that names an existing file, or
 * whose prefix is none of the providers', is a file.
 *
 * Keys come from the environment only, read by the provider at each call: the
 * CLI never takes a key on the command line and never records one. What it
 * records (run-meta) is the spec, the provider, the endpoint flags and, for an
 * OpenAI-compatible server, the *name* of the variable that holds its key.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { InvalidOptionsError } from '../errors/index.js';
import { PROVIDER_API_KEY_ENV } from '../headless/index.js';
import type { LanguageModel } from '../models/types.js';
import { createAnthropic } from '../providers/anthropic/index.js';
import { createGoogle } from '../providers/google/index.js';
import { createOpenAICompatible } from '../providers/openai-compatible/index.js';
import { createOpenAI } from '../providers/openai/index.js';
import { isSendableHeaderValue } from '../providers/utils/api-key.js';
import { UsageError } from './args.js';
import { demoModel } from './demo.js';
import { loadModelFile, scriptedModel } from './scripted-model.js';

/** The prefixes `--model` knows, in the order help and errors list them. */
export const MODEL_PREFIXES = ['openai', 'openai-chat', 'anthropic', 'google', 'openai-compatible'] as const;
export type ModelPrefix = (typeof MODEL_PREFIXES)[number];

/** The provider name an `openai-compatible:` model reports when `--provider-name` is not given. */
export const DEFAULT_COMPATIBLE_NAME = 'openai-compatible';

/** A provider model as run-meta records it. Never a key: `apiKeyEnv` is the name of a variable. */
export interface ProviderModelSource {
  kind: 'provider';
  /** As given: `openai:gpt-5`. */
  spec: string;
  prefix: ModelPrefix;
  modelId: string;
  baseURL?: string;
  /** The `openai-compatible` provider's name. */
  providerName?: string;
  /** The variable an `openai-compatible` server's key is read from. */
  apiKeyEnv?: string;
}

export type ModelSource = { kind: 'file'; path: string } | { kind: 'demo' } | ProviderModelSource;

/** The endpoint flags of a command line: `--base-url`, `--provider-name`, `--api-key-env`. */
export interface EndpointFlags {
  baseURL?: string;
  providerName?: string;
  apiKeyEnv?: string;
}

const PREFIX_LIST = MODEL_PREFIXES.map((p) => `${p}:`).join(', ');

/** `openai` and `openai-chat` are one server: an endpoint flag for one applies to the other. */
const family = (prefix: ModelPrefix) => (prefix === 'openai-chat' ? 'openai' : prefix);

/** Checks the endpoint flags' own values. */
export function checkEndpointFlags(flags: { baseURL?: string | undefined; providerName?: string | undefined; apiKeyEnv?: string | undefined }): EndpointFlags {
  const out: EndpointFlags = {};
  if (flags.baseURL !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(flags.baseURL);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      throw new UsageError(`--base-url takes an http:// or https:// URL (the API's base, such as http://localhost:11434/v1), got ${JSON.stringify(flags.baseURL)}.`);
    }
    if (url.username || url.password || url.search) {
      // Credentials or a query in the URL would be recorded with the run: keys go in the environment.
      throw new UsageError('--base-url must not carry credentials or a query string: put the key in an environment variable (--api-key-env for an OpenAI-compatible server).');
    }
    out.baseURL = flags.baseURL;
  }
  if (flags.providerName !== undefined) {
    if (!/^[a-z0-9][a-z0-9_-]{0,63}$/.test(flags.providerName)) {
      throw new UsageError(`--provider-name takes a lower-case name of letters, digits, '-' and '_' (such as ollama), got ${JSON.stringify(flags.providerName)}.`);
    }
    out.providerName = flags.providerName;
  }
  if (flags.apiKeyEnv !== undefined) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(flags.apiKeyEnv)) {
      throw new UsageError(`--api-key-env takes the name of an environment variable (such as OLLAMA_API_KEY), not the key itself; got ${JSON.stringify(flags.apiKeyEnv.length > 12 ? `${flags.apiKeyEnv.slice(0, 4)}…` : flags.apiKeyEnv)}.`);
    }
    out.apiKeyEnv = flags.apiKeyEnv;
  }
  return out;
}

/** The prefix of a provider spec, or undefined when the value is not one. */
function prefixOf(value: string): { prefix: ModelPrefix; modelId: string } | { unknown: string } | undefined {
  const at = value.indexOf(':');
  if (at <= 0) return undefined;
  const head = value.slice(0, at);
  if ((MODEL_PREFIXES as readonly string[]).includes(head)) return { prefix: head as ModelPrefix, modelId: value.slice(at + 1) };
  // `C:\models\x.json` is a path, not a provider.
  return /^[a-z][a-z0-9-]*$/.test(head) ? { unknown: head } : undefined;
}

/**
 * Reads one `--model` / `--fallback` value. A file is loaded and checked here,
 * so a bad one is a usage error before anything is written.
 */
export function parseModelArg(flag: string, value: string, cwd: string): ModelSource {
  if (value === '') throw new UsageError(`--${flag} must not be empty: pass a provider model (${PREFIX_LIST}) or a scripted model file.`);
  const parsed = existsSync(resolve(cwd, value)) ? undefined : prefixOf(value);
  if (parsed && 'prefix' in parsed) {
    const { prefix, modelId } = parsed;
    if (modelId === '' || /\s/.test(modelId) || /[\u0000-\u001f]/.test(modelId)) {
      throw new UsageError(`--${flag} ${value}: put the model id after the colon, without spaces (for example ${prefix}:${prefix === 'anthropic' ? 'claude-sonnet-4-5' : prefix === 'google' ? 'gemini-2.5-flash' : prefix === 'openai-compatible' ? 'llama3.2' : 'gpt-5'}).`);
    }
    return { kind: 'provider', spec: value, prefix, modelId };
  }
  try {
    return { kind: 'file', path: loadModelFile(value, cwd).path };
  } catch (error) {
    if (parsed && 'unknown' in parsed && error instanceof UsageError && /no such file/.test(error.message)) {
      throw new UsageError(`--${flag} ${value}: no such file, and "${parsed.unknown}" is not a model provider Cairn knows (${PREFIX_LIST}).`);
    }
    throw error;
  }
}

/**
 * The model and fallbacks of a command line with the endpoint flags applied.
 * The flags belong to the `--model`'s provider: they apply to it and to every
 * fallback of the same provider (`openai` and `openai-chat` count as one); the
 * other fallbacks go to their provider's usual endpoint.
 */
export function withEndpoints(model: ModelSource, fallbacks: ModelSource[], flags: EndpointFlags): { model: ModelSource; fallbacks: ModelSource[] } {
  const given = Object.keys(flags).filter((k) => flags[k as keyof EndpointFlags] !== undefined);
  if (model.kind !== 'provider') {
    if (given.length > 0) {
      const name = flags.baseURL !== undefined ? '--base-url' : flags.providerName !== undefined ? '--provider-name' : '--api-key-env';
      throw new UsageError(`${name} goes with a provider model (--model ${PREFIX_LIST.replaceAll(':', ':<model>')}), not a scripted model file.`);
    }
    for (const f of fallbacks) {
      if (f.kind === 'provider' && f.prefix === 'openai-compatible') {
        throw new UsageError(`--fallback ${f.spec}: an openai-compatible fallback uses the server of an openai-compatible --model (its --base-url); pass the server with --model openai-compatible:<model> --base-url <url>.`);
      }
    }
    return { model, fallbacks };
  }
  const compatible = model.prefix === 'openai-compatible';
  if (!compatible && flags.providerName !== undefined) throw new UsageError('--provider-name goes with --model openai-compatible:<model>: it names the server the model runs on.');
  if (!compatible && flags.apiKeyEnv !== undefined) {
    throw new UsageError(`--api-key-env goes with --model openai-compatible:<model>; ${model.prefix} reads its key from ${keyVariables(model).join(' or ')}.`);
  }
  if (compatible && flags.baseURL === undefined) {
    throw new UsageError(`--model ${model.spec} needs --base-url <url>: the server's API base, such as http://localhost:11434/v1.`);
  }
  const apply = (source: ModelSource): ModelSource => {
    if (source.kind !== 'provider') return source;
    if (family(source.prefix) !== family(model.prefix)) {
      if (source.prefix === 'openai-compatible') {
        throw new UsageError(`--fallback ${source.spec}: an openai-compatible fallback uses the server of an openai-compatible --model (its --base-url); this run's --model is ${model.spec}.`);
      }
      return source;
    }
    return {
      ...source,
      ...(flags.baseURL !== undefined ? { baseURL: flags.baseURL } : {}),
      ...(compatible ? { providerName: flags.providerName ?? DEFAULT_COMPATIBLE_NAME } : {}),
      ...(compatible && flags.apiKeyEnv !== undefined ? { apiKeyEnv: flags.apiKeyEnv } : {}),
    };
  };
  return { model: apply(model), fallbacks: fallbacks.map(apply) };
}

/** Where a provider model's key is read from (none for an OpenAI-compatible server without --api-key-env). */
export function keyVariables(source: ProviderModelSource): readonly string[] {
  switch (source.prefix) {
    case 'openai':
    case 'openai-chat':
      return PROVIDER_API_KEY_ENV.openai!;
    case 'anthropic':
      return PROVIDER_API_KEY_ENV.anthropic!;
    case 'google':
      return PROVIDER_API_KEY_ENV.google!;
    case 'openai-compatible':
      return source.apiKeyEnv ? [source.apiKeyEnv] : [];
  }
}

/** The model a recorded source stands for. No network call: providers read the key at each call. */
export function buildModel(source: ModelSource, cwd: string): LanguageModel {
  try {
    return build(source, cwd);
  } catch (error) {
    // A provider factory refuses a setting (InvalidOptionsError): the command line gave it.
    if (error instanceof InvalidOptionsError) throw new UsageError(`${describeSource(source)}: ${error.message}`);
    throw error;
  }
}

function build(source: ModelSource, cwd: string): LanguageModel {
  if (source.kind === 'demo') return demoModel();
  if (source.kind === 'file') return scriptedModel(loadModelFile(source.path, cwd).script);
  const base = source.baseURL !== undefined ? { baseURL: source.baseURL } : {};
  switch (source.prefix) {
    case 'openai':
      return createOpenAI(base)(source.modelId);
    case 'openai-chat':
      return createOpenAI(base).chat(source.modelId);
    case 'anthropic':
      return createAnthropic(base)(source.modelId);
    case 'google':
      return createGoogle(base)(source.modelId);
    case 'openai-compatible':
      return createOpenAICompatible({
        name: source.providerName ?? DEFAULT_COMPATIBLE_NAME,
        baseURL: source.baseURL ?? '',
        ...(source.apiKeyEnv ? { apiKeyEnv: source.apiKeyEnv } : {}),
      })(source.modelId);
  }
}

/** How printed lines name a source. */
export function describeSource(source: ModelSource): string {
  return source.kind === 'provider' ? source.spec : source.kind === 'demo' ? 'the demo model' : source.path;
}

/**
 * Refuses a leg whose provider models have no key in the environment, before
 * anything is written: the first call would fail with api_key_missing anyway.
 * For an OpenAI-compatible server the key is needed only when --api-key-env
 * named its variable; for the others a model that reports its own `keyStatus`
 * decides, else the provider's usual variables are looked at.
 */
export function requireKeys(entries: Array<{ flag: string; source: ModelSource; model: LanguageModel }>, env: NodeJS.ProcessEnv = process.env): void {
  const isSet = (name: string) => (env[name] ?? '').trim() !== '';
  for (const { flag, source, model } of entries) {
    if (source.kind !== 'provider') continue;
    let names = keyVariables(source);
    let present: boolean;
    if (source.prefix === 'openai-compatible') {
      if (names.length === 0) continue; // a server that needs no key
      present = names.some(isSet);
    } else {
      const status = typeof model.keyStatus === 'function' ? safeStatus(model, env) : undefined;
      if (status?.required === false) continue;
      if (status && status.envVars.length > 0) names = status.envVars;
      present = status ? status.present : names.some(isSet);
    }
    if (present) {
      // The provider sends the first set variable as it is: a pasted newline would fail every call.
      const used = names.find((name) => (env[name] ?? '') !== '');
      if (used !== undefined && !isSendableHeaderValue(env[used]!)) {
        throw new UsageError(`--${flag} ${source.spec}: ${used} cannot be sent as an HTTP header (it contains a line break or another control character); check it for a trailing newline.`);
      }
      continue;
    }
    const which = names.length === 0 ? 'its API key' : names.length === 1 ? names[0] : `one of ${names.join(', ')}`;
    throw new UsageError(`--${flag} ${source.spec} needs ${which} in the environment (cairn reads keys from the environment only, and never records them).`);
  }
}

function safeStatus(model: LanguageModel, env: NodeJS.ProcessEnv) {
  try {
    const status = model.keyStatus!(env);
    return status && typeof status.present === 'boolean' && Array.isArray(status.envVars) ? status : undefined;
  } catch {
    return undefined;
  }
}

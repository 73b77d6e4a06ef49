/** Every provider model tells doctor whether its key is at hand, without a network call. */
import { describe, expect, it } from 'vitest';
import { createAnthropic } from 'cairn/anthropic';
import { createGoogle } from 'cairn/google';
import { createOpenAI } from 'cairn/openai';
import { createOpenAICompatible } from 'cairn/openai-compatible';
import type { LanguageModel } from 'cairn/models';

const fail: typeof fetch = async () => {
  throw new Error('keyStatus must not make a request');
};

describe('keyStatus', () => {
  const cases: Array<[string, (apiKey?: string) => LanguageModel, string[]]> = [
    ['openai responses', (apiKey) => createOpenAI({ apiKey, fetch: fail })('gpt-5'), ['OPENAI_API_KEY']],
    ['openai chat', (apiKey) => createOpenAI({ apiKey, fetch: fail }).chat('gpt-4.1'), ['OPENAI_API_KEY']],
    ['anthropic', (apiKey) => createAnthropic({ apiKey, fetch: fail })('claude-sonnet-4-5'), ['ANTHROPIC_API_KEY']],
    ['google', (apiKey) => createGoogle({ apiKey, fetch: fail })('gemini-2.5-flash'), ['GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GOOGLE_GENERATIVE_AI_API_KEY']],
  ];

  it.each(cases)('%s: present when passed or in the environment, missing otherwise', (_name, make, envVars) => {
    expect(make('k-123456').keyStatus!({})).toEqual({ present: true, envVars, required: true });
    expect(make().keyStatus!({})).toEqual({ present: false, envVars, required: true });
    expect(make().keyStatus!({ [envVars.at(-1)!]: 'from-env' })).toMatchObject({ present: true });
    expect(make().keyStatus!({ [envVars[0]!]: '' })).toMatchObject({ present: false });
  });

  it('openai-compatible: a key is optional; apiKeyEnv names where it is read from', () => {
    const local = createOpenAICompatible({ name: 'ollama', baseURL: 'http://127.0.0.1:11434/v1', fetch: fail })('llama3');
    expect(local.keyStatus!({})).toEqual({ present: false, envVars: [], required: false });
    const router = createOpenAICompatible({ name: 'openrouter', baseURL: 'https://openrouter.example/api/v1', apiKeyEnv: 'OPENROUTER_API_KEY', fetch: fail })('x');
    expect(router.keyStatus!({ OPENROUTER_API_KEY: 'k' })).toEqual({ present: true, envVars: ['OPENROUTER_API_KEY'], required: false });
  });
});

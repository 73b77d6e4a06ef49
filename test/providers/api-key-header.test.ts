/**
 * An API key that cannot travel as an HTTP header value (a pasted newline, a
 * NUL, another control character) is a configuration mistake: every wire
 * refuses it with InvalidAPIKeyError (`api_key_invalid`, fault `user`) before
 * any request, never as a transient network failure, and the CLI exits 2
 * without a --retry-failed hint.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runAgent } from 'cairn/agent';
import { createAnthropic } from 'cairn/anthropic';
import { createGoogle } from 'cairn/google';
import { InvalidAPIKeyError, type LanguageModel } from 'cairn/models';
import { createOpenAI } from 'cairn/openai';
import { createOpenAICompatible } from 'cairn/openai-compatible';
import { cairn } from '../cli/helpers.js';
import { ask } from './fixtures/openai/harness.js';
import { startWireServer, visibleText, type WireServer } from './wire-server.js';

let server: WireServer;
beforeAll(async () => { server = await startWireServer(); });
afterAll(async () => { await server.close(); });
beforeEach(() => {
  server.requests.length = 0;
  server.replies.length = 0;
  // Whatever is asked, the server would answer: a request reaching it is the failure.
  server.handler = () => ({ json: { error: { message: 'must not be reached' } }, status: 500 });
});

const SECRET = 'sk-header-test-5d1c0b';
const BAD_KEYS: Array<[string, string]> = [
  ['a trailing newline', `${SECRET}\n`],
  ['a CRLF and a second header', `${SECRET}\r\nx-injected: 1`],
  ['a NUL', `${SECRET}\u0000`],
  ['a character beyond Latin-1', `${SECRET}\u2028`],
];

type Make = (key: { apiKey?: string; env?: string }) => LanguageModel;
const WIRES: Array<[string, Make, string]> = [
  ['openai responses', ({ apiKey }) => createOpenAI({ apiKey, baseURL: `${server.url}/v1` })('gpt-5'), 'OPENAI_API_KEY'],
  ['openai chat', ({ apiKey }) => createOpenAI({ apiKey, baseURL: `${server.url}/v1` }).chat('gpt-4.1'), 'OPENAI_API_KEY'],
  ['anthropic', ({ apiKey }) => createAnthropic({ apiKey, baseURL: `${server.url}/v1` })('claude-sonnet-4-5'), 'ANTHROPIC_API_KEY'],
  ['google', ({ apiKey }) => createGoogle({ apiKey, baseURL: `${server.url}/v1beta` })('gemini-2.5-flash'), 'GEMINI_API_KEY'],
  ['openai-compatible', ({ apiKey }) => createOpenAICompatible({ name: 'localai', baseURL: `${server.url}/v1`, apiKey, apiKeyEnv: 'LOCALAI_KEY' })('local-llm'), 'LOCALAI_KEY'],
];

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to be refused');
}

async function drain(stream: AsyncIterable<unknown> | ReadableStream<unknown>): Promise<void> {
  if (Symbol.asyncIterator in stream) {
    for await (const _ of stream as AsyncIterable<unknown>) void _;
    return;
  }
  const reader = (stream as ReadableStream<unknown>).getReader();
  while (!(await reader.read()).done) { /* read to the end */ }
}

const expectRefused = (error: unknown, from: string) => {
  expect(InvalidAPIKeyError.isInstance(error), String(error)).toBe(true);
  expect(error).toMatchObject({ code: 'api_key_invalid', fault: 'user' });
  expect((error as Error).message).toContain(`from ${from}`);
  expect(visibleText(error)).not.toContain(SECRET);
  expect(server.requests).toHaveLength(0);
};

describe.each(WIRES)('%s', (_wire, make, envVar) => {
  it.each(BAD_KEYS)('refuses a passed key with %s, whole and streamed, before any request', async (_what, key) => {
    const model = make({ apiKey: key });
    expectRefused(await refusal(model.doGenerate(ask('Hi'))), 'apiKey');
    expectRefused(await refusal(Promise.resolve().then(() => drain(model.doStream!(ask('Hi')) as never))), 'apiKey');
  });

  it('refuses a key read from the environment, naming the variable', async () => {
    const saved = process.env[envVar];
    process.env[envVar] = `${SECRET}\n`;
    try {
      expectRefused(await refusal(make({}).doGenerate(ask('Hi'))), envVar);
    } finally {
      if (saved === undefined) delete process.env[envVar];
      else process.env[envVar] = saved;
    }
  });

  it('fails a run once, as a user fault that is not transient', async () => {
    const result = await runAgent({ model: make({ apiKey: `${SECRET}\n` }), prompt: 'Hi', maxRetries: 3 });
    expect(result.status).toBe('failed');
    if (result.status !== 'failed') return;
    expect(result.error.code).toBe('api_key_invalid');
    expect(result.retry).toBeUndefined();
    expect(server.requests).toHaveLength(0);
  });
});

describe('cairn run', () => {
  it('exits 2 on a key with a newline, before the store is created, with no --retry-failed hint', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'cairn-key-'));
    const result = await cairn(['run', 'Hi', '--model', 'openai:gpt-4.1'], { cwd, env: { OPENAI_API_KEY: `${SECRET}\n`, OPENAI_BASE_URL: `${server.url}/v1` } });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('OPENAI_API_KEY cannot be sent as an HTTP header');
    expect(`${result.stdout}${result.stderr}`).not.toContain('--retry-failed');
    expect(`${result.stdout}${result.stderr}`).not.toContain(SECRET);
    expect(existsSync(join(cwd, '.cairn', 'runs.sqlite'))).toBe(false);
    expect(server.requests).toHaveLength(0);
  });
});

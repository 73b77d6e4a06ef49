/**
 * An API key never leaves: for every provider and every failure path (401,
 * unknown model, 429 with retry-after, 500, 503, 529, a body that is not
 * JSON, a connection cut before the answer, a hang past the transport
 * timeout), with an error body that echoes the key, the canary key is in no
 * result, no stored record (the SQLite file's bytes included), no stream part
 * and no headless report — only in the request's auth header.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamAgent, type AgentEvent, type LanguageModel } from 'cairn/agent';
import { createAnthropic } from 'cairn/anthropic';
import { createGoogle } from 'cairn/google';
import { runHeadless } from 'cairn/headless';
import { createOpenAI } from 'cairn/openai';
import { createOpenAICompatible } from 'cairn/openai-compatible';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { CANARY_KEY, startWireServer, visibleText, type WireReply, type WireServer } from './wire-server.js';

let wire: WireServer;
const dir = mkdtempSync(join(tmpdir(), 'cairn-canary-'));
beforeAll(async () => {
  wire = await startWireServer();
});
afterAll(async () => {
  await wire.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * A key that looks like one (the redaction patterns know `sk-...`) and one that
 * does not: only the provider's registration of its key can hide the second.
 */
const PLAIN_KEY = 'q7Zr2PlainLookingKeyVal9';

type Make = (baseURL: string, apiKey: string) => LanguageModel;
const providers: Array<[string, Make, string]> = [
  ['openai responses', (baseURL, apiKey) => createOpenAI({ apiKey, baseURL })('gpt-4.1'), 'authorization'],
  ['openai chat', (baseURL, apiKey) => createOpenAI({ apiKey, baseURL }).chat('gpt-4.1'), 'authorization'],
  ['anthropic', (baseURL, apiKey) => createAnthropic({ apiKey, baseURL })('claude-sonnet-4-5'), 'x-api-key'],
  ['google', (baseURL, apiKey) => createGoogle({ apiKey, baseURL })('gemini-2.5-flash'), 'x-goog-api-key'],
  ['openai-compatible', (baseURL, apiKey) => createOpenAICompatible({ name: 'local', baseURL, apiKey })('llama3'), 'authorization'],
];

const echo = (key: string) => ({ error: { message: `Incorrect API key provided: ${key}.`, type: 'invalid_request_error', code: 'invalid_api_key' } });
const failures: Array<[string, (key: string) => WireReply]> = [
  ['401', (key) => ({ status: 401, json: echo(key) })],
  ['unknown model', (key) => ({ status: 404, json: { error: { message: `The model does not exist (key ${key}).` } } })],
  ['429 with retry-after', (key) => ({ status: 429, headers: { 'retry-after': '0', 'x-request-id': 'req_1' }, json: echo(key) })],
  ['500', (key) => ({ status: 500, json: echo(key) })],
  ['503', (key) => ({ status: 503, body: `upstream down; auth=${key}` })],
  ['529', (key) => ({ status: 529, json: { type: 'error', error: { type: 'overloaded_error', message: `Overloaded ${key}` } } })],
  ['malformed JSON', (key) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: `{"id": "${key}", oops` })],
  ['a connection cut before the answer', () => ({ chunks: ['event: x\n'], cutAfter: 0 })],
  ['a hang past the timeout', () => ({ hang: true })],
];

let file = 0;

describe.each(providers.flatMap(([name, make, header]) => [CANARY_KEY, PLAIN_KEY].map((key) => [`${name} (${key === CANARY_KEY ? 'sk- key' : 'plain key'})`, (url: string) => make(url, key), header, key] as const)))('%s', (_name, make, authHeader, key) => {
  it.each(failures)('%s: the key is nowhere but the auth header', async (_failure, reply) => {
    wire.requests.length = 0;
    wire.replies.length = 0;
    wire.reply(reply(key));
    const path = join(dir, `runs-${++file}.sqlite`);
    const ops = createSqliteOpsStore({ path });
    const model = make(`${wire.url}/v1`);
    const stream = streamAgent({
      model, prompt: 'Hi.', maxRetries: 0, modelTimeoutMs: 300,
      session: { store: ops.agentRuns, runId: 'canary', scope: 's' },
    });
    const events: AgentEvent[] = [];
    for await (const event of stream.events) events.push(event);
    const result = await stream.result;
    expect(result.status).toBe('failed');
    const stored = await ops.agentRuns.load('canary');
    expect(stored?.status).toBe('failed');
    ops.close?.();

    const leaks = [
      visibleText(result), visibleText(events), visibleText(stored),
      // The file on disk, WAL included.
      ...readdirSync(dir).filter((f) => f.startsWith(`runs-${file}.sqlite`)).map((f) => readFileSync(join(dir, f)).toString('latin1')),
    ];
    for (const text of leaks) expect(text).not.toContain(key);

    // It was sent, once, where the provider reads it, and in nothing else of the request.
    expect(wire.requests).toHaveLength(1);
    const request = wire.requests[0]!;
    expect(request.headers[authHeader]).toContain(key);
    const { [authHeader]: _auth, ...others } = request.headers;
    expect(JSON.stringify(others) + request.path + JSON.stringify(request.body)).not.toContain(key);
  });

  it('a headless report of a failed call shows no key', async () => {
    wire.replies.length = 0;
    wire.reply({ status: 500, json: echo(key) });
    const ops = createSqliteOpsStore({ path: join(dir, `headless-${++file}.sqlite`) });
    const report = await runHeadless({ model: make(`${wire.url}/v1`), prompt: 'Hi.', store: ops.agentRuns, maxRetries: 0 });
    ops.close?.();
    expect(report.outcome).toBe('failed');
    expect(report.retry).toMatchObject({ resumeWith: 'retryFailed' });
    expect(visibleText(report)).not.toContain(key);
  });
});

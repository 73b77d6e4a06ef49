/**
 * `cairn` with a real provider model, in real processes: an OpenAI-compatible
 * model (`--model openai-compatible:<model> --base-url <url>`) talks to the
 * local wire server, which answers with recorded Chat Completions SSE
 * (test/cli/fixtures/openai-chat, see its README). The run suspends for an
 * approval, the approving process is killed inside the tool, a plain resume
 * reports the unknown effect, and `--reconcile` completes the run; the server
 * saw exactly the two model calls, the effect ran once, and the key that came
 * from the environment is nowhere in the store or the output.
 */
import Database from 'better-sqlite3';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CANARY_KEY, startWireServer, type WireServer } from '../providers/wire-server.js';
import { cairn, json, KILLED_LEASE_TTL_MS, leaseLapse, start, startUntil, storedRun, tempDir, write, type Result } from './helpers.js';

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`./fixtures/openai-chat/${name}.json`, import.meta.url), 'utf8'));

/** The charge needs approval; once approved it logs the effect, marks that it started, and holds until the process is killed. */
const TOOLS = `import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
const started = new URL('./started', import.meta.url);
const effects = new URL('./effects.log', import.meta.url);
export const tools = {
  charge: {
    description: 'Charge an order once.',
    parameters: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
    needsApproval: true,
    execute: async ({ order }) => {
      appendFileSync(effects, 'charged ' + order + '\\n');
      if (!existsSync(started)) {
        writeFileSync(started, String(process.pid));
        await new Promise(() => setInterval(() => {}, 1000));
      }
      return { charged: order };
    },
  },
};
`;

const KEY_ENV = { CAIRN_E2E_KEY: CANARY_KEY };

let server: WireServer;
beforeAll(async () => {
  server = await startWireServer();
});
afterAll(async () => {
  await server?.close();
});

/** Every byte the run left in its working directory (the store, its WAL, the log), as text. */
const everythingOnDisk = (cwd: string): string => {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, name.name);
      if (name.isDirectory()) walk(path);
      else out.push(readFileSync(path).toString('latin1'));
    }
  };
  walk(cwd);
  return out.join('\n');
};

describe('cairn with an OpenAI-compatible model over the wire', () => {
  it('suspends for approval, survives a kill inside the tool, reports the unknown effect, and completes with --reconcile', async () => {
    const cwd = tempDir();
    write(cwd, { 'tools.mjs': TOOLS });
    const outputs: Result[] = [];
    const base = `${server.url}/v1`;
    server.requests.length = 0;
    server.reply({ sse: fixture('tool-call') });

    // 1. The run: the model asks for the charge, which waits for a human.
    const first = await cairn([
      'run', 'Charge order 7.', '--model', 'openai-compatible:local-llm', '--base-url', base,
      '--provider-name', 'localai', '--api-key-env', 'CAIRN_E2E_KEY', '--tools', 'tools.mjs', '--run-id', 'e2e', '--json',
    ], { cwd, env: KEY_ENV });
    outputs.push(first);
    expect(first.code, first.stderr).toBe(3);
    const suspended = json(first);
    expect(suspended.pending).toEqual([expect.objectContaining({ kind: 'approval', toolName: 'charge', toolCallId: 'call_e2e_1', args: { order: '7' } })]);
    expect(server.requests).toHaveLength(1);
    const [call1] = server.requests;
    expect(call1).toMatchObject({ method: 'POST', path: '/v1/chat/completions' });
    expect(call1!.headers.authorization).toBe(`Bearer ${CANARY_KEY}`);
    expect(call1!.body).toMatchObject({
      model: 'local-llm',
      stream: true,
      messages: [{ role: 'user', content: 'Charge order 7.' }],
      tools: [{ type: 'function', function: { name: 'charge', description: 'Charge an order once.', parameters: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] } } }],
    });

    // What the CLI recorded for the run: the spec and its endpoint, the variable's name, never the key.
    const db = new Database(join(cwd, '.cairn', 'runs.sqlite'), { readonly: true });
    const meta = JSON.parse((db.prepare('SELECT meta FROM cairn_cli_runs WHERE run_id = ?').get('e2e') as { meta: string }).meta);
    db.close();
    expect(meta.model).toEqual({
      kind: 'provider', spec: 'openai-compatible:local-llm', prefix: 'openai-compatible', modelId: 'local-llm',
      baseURL: base, providerName: 'localai', apiKeyEnv: 'CAIRN_E2E_KEY',
    });

    // 2. Without the key in the environment a resume is refused before it touches the run.
    const before = storedRun(join(cwd, '.cairn', 'runs.sqlite'), 'e2e');
    const keyless = await cairn(['resume', 'e2e', '--approve', suspended.pending[0].approvalId], { cwd });
    outputs.push(keyless);
    expect(keyless.code).toBe(2);
    expect(keyless.stderr).toContain('needs CAIRN_E2E_KEY in the environment');
    expect(storedRun(join(cwd, '.cairn', 'runs.sqlite'), 'e2e')).toEqual(before);

    // 3. The approval, from another process, killed while the charge is under way.
    const approving = await startUntil(['resume', 'e2e', '--approve', suspended.pending[0].approvalId, '--lease-ttl', String(KILLED_LEASE_TTL_MS)],
      { cwd, env: KEY_ENV }, join(cwd, 'started'));
    approving.child.kill('SIGKILL');
    const killed = await approving.done;
    outputs.push(killed);
    expect(killed.signal).toBe('SIGKILL');
    await leaseLapse();
    expect(server.requests).toHaveLength(1); // the approved call runs before any model call

    // 4. A plain resume from a third process: the charge started and its outcome is unknown.
    const plain = await cairn(['resume', 'e2e', '--json'], { cwd, env: KEY_ENV });
    outputs.push(plain);
    expect(plain.code, plain.stderr).toBe(3);
    expect(json(plain)).toMatchObject({ outcome: 'pending', reason: 'tool-reconciliation-required' });
    expect(json(plain).pending).toEqual([expect.objectContaining({ kind: 'unknown-effect', toolName: 'charge', toolCallId: 'call_e2e_1' })]);
    expect(server.requests).toHaveLength(1);

    // 5. The operator checked: the charge went through. --reconcile records it and the model answers.
    server.reply({ sse: fixture('final-text') });
    const done = await cairn(['resume', 'e2e', '--reconcile', 'call_e2e_1={"charged":"7"}', '--json'], { cwd, env: KEY_ENV });
    outputs.push(done);
    expect(done.code, done.stderr).toBe(0);
    const report = json(done);
    expect(report).toMatchObject({ outcome: 'completed', output: 'Charged order 7.' });
    // Both calls' usage, the cached prompt tokens of the second included.
    expect(report.usage).toMatchObject({ inputTokens: 82 + 131, outputTokens: 17 + 5, cacheReadTokens: 64 });
    expect(server.requests).toHaveLength(2);
    const call2 = server.requests[1]!;
    expect(call2.headers.authorization).toBe(`Bearer ${CANARY_KEY}`);
    const messages = (call2.body as { messages: Array<Record<string, unknown>> }).messages;
    expect(messages[0]).toEqual({ role: 'user', content: 'Charge order 7.' });
    expect(messages[1]).toMatchObject({
      role: 'assistant',
      tool_calls: [{ id: 'call_e2e_1', type: 'function', function: { name: 'charge', arguments: JSON.stringify({ order: '7' }) } }],
    });
    expect(messages[2]).toMatchObject({ role: 'tool', tool_call_id: 'call_e2e_1', content: '{"charged":"7"}' });
    expect(messages).toHaveLength(3);

    // The effect ran once: in the killed process, never again.
    expect(readFileSync(join(cwd, 'effects.log'), 'utf8')).toBe('charged 7\n');
    // The key came from the environment and went only into the requests' header.
    expect(everythingOnDisk(cwd)).not.toContain(CANARY_KEY);
    for (const output of outputs) expect(output.stdout + output.stderr).not.toContain(CANARY_KEY);
  });

  it('fails over to --fallback after a 503, with --max-retries 0 trying each model once', async () => {
    const cwd = tempDir();
    const base = `${server.url}/v1`;
    server.requests.length = 0;
    server.reply({ status: 503, json: fixture('overloaded') }, { sse: fixture('final-text') });
    const result = await cairn([
      'run', 'Charge order 7.', '--model', 'openai-compatible:primary', '--fallback', 'openai-compatible:backup',
      '--base-url', base, '--max-retries', '0', '--run-id', 'fo', '--json',
    ], { cwd });
    expect(result.code, result.stderr).toBe(0);
    expect(json(result).output).toBe('Charged order 7.');
    expect(server.requests.map((r) => (r.body as { model: string }).model)).toEqual(['primary', 'backup']);
    // No --api-key-env: an OpenAI-compatible server gets no authorization header.
    expect(server.requests[0]!.headers.authorization).toBeUndefined();

    // The fallback is recorded: a resume of the finished run rebuilds the same binding and returns the stored result.
    const again = await cairn(['resume', 'fo', '--json'], { cwd });
    expect(again.code, again.stderr).toBe(0);
    expect(json(again).output).toBe('Charged order 7.');
    expect(server.requests).toHaveLength(2);
  });

  it('openai-chat:<model> with --base-url: the key from OPENAI_API_KEY, the endpoint recorded for the resume', async () => {
    const cwd = tempDir();
    server.requests.length = 0;
    server.reply({ sse: fixture('final-text') });
    const env = { OPENAI_API_KEY: CANARY_KEY };
    const result = await cairn(['run', 'Charge order 7.', '--model', 'openai-chat:gpt-4.1', '--base-url', `${server.url}/v1`, '--run-id', 'chat'], { cwd, env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('Charged order 7.');
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({ path: '/v1/chat/completions', body: { model: 'gpt-4.1', stream: true } });
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${CANARY_KEY}`);
    // gpt-4.1 is in the bundled table: 67 fresh input tokens at $2, 64 cached at $0.50, 5 output at $8 per million.
    expect(result.stdout).toContain('1 step(s), 136 tokens, $0.0002.');
    // A resume of the completed run only reports it: no model call, so no key is needed.
    const inspected = await cairn(['resume', 'chat', '--json'], { cwd });
    expect(inspected.code, inspected.stderr).toBe(0);
    expect(json(inspected).cost).toEqual({ usd: expect.closeTo((67 * 2 + 64 * 0.5 + 5 * 8) / 1e6, 12), complete: true });
    expect(everythingOnDisk(cwd)).not.toContain(CANARY_KEY);
    expect(server.requests).toHaveLength(1);
  });

  it('--model-timeout ends an attempt that hangs: the run stops at a limit (6) and can go on with --retry-failed', async () => {
    const cwd = tempDir();
    server.requests.length = 0;
    server.reply({ hang: true });
    const run = start([
      'run', 'Charge order 7.', '--model', 'openai-compatible:slow', '--base-url', `${server.url}/v1`,
      '--max-retries', '0', '--model-timeout', '300', '--run-id', 'slow', '--json',
    ], { cwd });
    // The attempt must end 300 ms in; a process still waiting after 10 s never will (it is killed, and the test fails).
    const guard = setTimeout(() => run.child.kill('SIGKILL'), 10_000);
    const result = await run.done.finally(() => clearTimeout(guard));
    expect(result.signal, 'the hung model call never timed out').toBeNull();
    expect(result.code, result.stderr).toBe(6);
    expect(json(result)).toMatchObject({ outcome: 'limit', retry: { resumeWith: 'retryFailed' } });
    expect(server.requests).toHaveLength(1);

    server.reply({ sse: fixture('final-text') });
    const retried = await cairn(['resume', 'slow', '--retry-failed', '--json'], { cwd });
    expect(retried.code, retried.stderr).toBe(0);
    expect(json(retried).output).toBe('Charged order 7.');
  });
});

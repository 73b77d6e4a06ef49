/**
 * An Agent run on a run store survives its process: a child killed while the
 * second model call is in flight is picked up by the same agent.run call in a
 * new process, which answers the completed tool call from its receipt (the
 * effect happened once) and finishes; a child killed inside the tool leaves
 * an effect nobody can vouch for, and the next process stops with taskOutcome
 * needs_reconciliation without running it again. SQLite and PostgreSQL.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describePostgres } from '../stores/pg-env.js';
import { startResponsesServer, type ResponsesServer } from './support/responses-server.js';
import type { RestartArgs } from './support/restart-worker.js';

let server: ResponsesServer;
const dirs: string[] = [];
beforeAll(async () => {
  server = await startResponsesServer();
});
afterAll(async () => {
  await server.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Child {
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string; err: string }>;
  kill(): void;
}

function start(args: RestartArgs): Child {
  const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', 'test/sdk/support/restart-worker.ts', JSON.stringify(args)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string; err: string }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal, out, err }));
  });
  return { done, kill: () => child.kill('SIGKILL') };
}

async function until(what: string, check: () => boolean, child: Child): Promise<void> {
  let exited = false;
  void child.done.then(() => (exited = true));
  while (!check()) {
    if (exited) throw new Error(`the child exited before ${what}: ${(await child.done).err}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);
const requestsOf = (script: string) => server.requests.filter((r) => r.script === script);

function scenarios(label: string, world: (name: string) => Omit<RestartArgs, 'baseURL' | 'runId' | 'effects'>) {
  it(`${label}: killed while the model answers the tool result, the run goes on in a new process with the effect done once`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-sdk-restart-'));
    dirs.push(dir);
    const script = `restart-model-${label}`;
    server.script(script, [{ toolCalls: [{ name: 'charge', args: { order: 'A-1' } }] }, { hang: true }]);
    const args: RestartArgs = { ...world('model'), baseURL: server.baseURL(script), runId: 'order-a1', effects: join(dir, 'effects.log') };
    const first = start(args);
    // The tool ran and its receipt was saved before the second model call went out.
    await until('the second model call', () => requestsOf(script).length === 2, first);
    first.kill();
    expect((await first.done).signal).toBe('SIGKILL');
    expect(lines(args.effects)).toHaveLength(1);

    server.script(script, [{ text: 'Charged order A-1.' }]);
    const second = await start(args).done;
    expect(second.err).toBe('');
    expect(JSON.parse(second.out.trim())).toMatchObject({ status: 'completed', taskOutcome: 'resolved', outputText: 'Charged order A-1.' });
    // The tool did not run again: its receipt answered the call, and the model got its output.
    expect(lines(args.effects)).toHaveLength(1);
    const resumed = requestsOf(script).at(-1)!;
    expect(JSON.stringify(resumed.body.input)).toContain('charged A-1');

    // The same call once more answers from the stored, completed run: no model call, no effect.
    const before = requestsOf(script).length;
    const third = await start(args).done;
    expect(JSON.parse(third.out.trim())).toMatchObject({ status: 'completed', outputText: 'Charged order A-1.' });
    expect(requestsOf(script).length).toBe(before);
  });

  it(`${label}: killed inside the tool, the next process stops for reconciliation and does not run it again`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-sdk-restart-'));
    dirs.push(dir);
    const script = `restart-tool-${label}`;
    server.script(script, [{ toolCalls: [{ name: 'charge', args: { order: 'A-1' } }] }]);
    const args: RestartArgs = { ...world('tool'), baseURL: server.baseURL(script), runId: 'order-a1', effects: join(dir, 'effects.log') };
    const first = start({ ...args, hangIn: 'tool' });
    await until('the effect', () => lines(args.effects).length === 1, first);
    first.kill();
    await first.done;

    const second = await start(args).done;
    expect(second.err).toBe('');
    expect(JSON.parse(second.out.trim())).toMatchObject({
      status: 'stopped', reason: 'tool-reconciliation-required', taskOutcome: 'needs_reconciliation',
    });
    expect(lines(args.effects)).toHaveLength(1);
    expect(requestsOf(script)).toHaveLength(1);
  });
}

describe('an idempotent tool killed mid-effect', () => {
  it('runs again in the next process under the same idempotencyKey, and the run completes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-sdk-restart-'));
    dirs.push(dir);
    const script = 'restart-idempotent';
    server.script(script, [{ toolCalls: [{ name: 'charge', args: { order: 'A-1' } }] }]);
    const args: RestartArgs = {
      backend: 'sqlite', path: join(dir, 'runs.sqlite'), idempotent: true,
      baseURL: server.baseURL(script), runId: 'order-a1', effects: join(dir, 'effects.log'),
    };
    const first = start({ ...args, hangIn: 'tool' });
    await until('the effect', () => lines(args.effects).length === 1, first);
    first.kill();
    await first.done;
    server.script(script, [{ text: 'Charged order A-1.' }]);
    const second = await start(args).done;
    expect(JSON.parse(second.out.trim())).toMatchObject({ status: 'completed', taskOutcome: 'resolved' });
    const effects = lines(args.effects).map((l) => JSON.parse(l) as { key: string; pid: number });
    expect(effects).toHaveLength(2);
    // Two processes, one call: the key the system the tool calls can deduplicate by is the same.
    expect(effects[0]!.pid).not.toBe(effects[1]!.pid);
    expect(effects[1]!.key).toBe(effects[0]!.key);
  });
});

describe('an Agent run on SQLite survives a killed process', () => {
  scenarios('sqlite', (name) => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-sdk-db-'));
    dirs.push(dir);
    return { backend: 'sqlite', path: join(dir, `${name}.sqlite`) };
  });
});

describePostgres('an Agent run on PostgreSQL survives a killed process', (env) => {
  scenarios('postgres', () => ({ backend: 'postgres', url: env.url, schema: env.newSchema() }));
});

/**
 * A call in flight when its server or the run dies: the server SIGKILLed
 * (stdio), the HTTP server closed with every connection cut, the run's
 * process SIGKILLed. Each is an unknown effect: the run stops for
 * reconciliation, the effect is never repeated unless a resume asks for it,
 * and a reconciled outcome answers the call.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentResult } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createMockModel } from 'cairn/testing';
import { cleanDirs, effectLines, notesServer, until, world } from './helpers.js';
import { startHttpNotes } from './servers/http.js';

afterAll(cleanDirs);

const chargeTurn = { toolCalls: [{ toolName: 'notes__charge', args: { order: 'o-1' }, toolCallId: 'c1' }] };
const toolAnswers = (result: AgentResult<string>) => result.messages.filter((m) => m.role === 'tool').map((m) => m.content);
const charges = (lines: string[]) => lines.filter((l) => l.startsWith('charge-started'));

describe('an MCP call in flight when something dies', () => {
  it('the stdio server is SIGKILLed mid-call: an unknown effect, never run again until a resume settles it', async () => {
    const { effects } = world('kill-stdio');
    const store = createInMemoryAgentRunStore();
    const session = { store, runId: 'kill-stdio', scope: 't' };
    const model = createMockModel({ responses: [chargeTurn, { text: 'Charged.' }] });
    const mcp = { servers: [notesServer(effects)] };
    const running = runAgent({ model, prompt: 'Charge.', session, mcp });
    await until(() => charges(effectLines(effects)).length === 1);
    const pid = Number(charges(effectLines(effects))[0]!.split(' ')[2]);
    process.kill(pid, 'SIGKILL');
    const first = await running;
    expect(first).toMatchObject({ status: 'stopped', reason: 'tool-reconciliation-required' });
    expect(first.status === 'stopped' && first.unknownEffects?.map((u) => [u.toolCallId, u.toolName, u.status])).toEqual([['c1', 'notes__charge', 'executing']]);
    expect(first.warnings.find((w) => w.toolCallId === 'c1')?.message).toContain('the connection to the server ended');
    // A resume that settles nothing stops again and starts nothing.
    const again = await resumeAgent({ model, prompt: 'Charge.', session, mcp });
    expect(again).toMatchObject({ status: 'stopped', reason: 'tool-reconciliation-required' });
    // The operator found the charge landed: the recorded outcome answers, the server is not asked again.
    const settled = await resumeAgent({ model, prompt: 'Charge.', session, mcp, reconciledToolResults: [{ toolCallId: 'c1', output: 'charged o-1' }] });
    expect(settled.status).toBe('completed');
    expect(toolAnswers(settled)).toEqual(['charged o-1']);
    expect(charges(effectLines(effects))).toHaveLength(1);
  });

  it('the HTTP server is closed mid-call: an unknown effect; retryToolCallIds runs it once more on a new server', async () => {
    const first = await startHttpNotes();
    const store = createInMemoryAgentRunStore();
    const session = { store, runId: 'kill-http', scope: 't' };
    const model = createMockModel({ responses: [chargeTurn, { text: 'Charged.' }] });
    const running = runAgent({
      model, prompt: 'Charge.', session,
      mcp: { servers: [{ name: 'notes', transport: { type: 'http', url: first.url, headers: { authorization: 'Bearer t0k3n' } } }], timeouts: { callMs: 2_000 } },
    });
    await first.chargeStarted;
    await first.kill();
    const stopped = await running;
    expect(stopped).toMatchObject({ status: 'stopped', reason: 'tool-reconciliation-required' });
    expect(first.effects).toEqual(['charge-started o-1']);
    expect(first.headers.every((h) => h.authorization === 'Bearer t0k3n')).toBe(true);
    // The record keeps no header of the transport.
    expect(JSON.stringify(await store.load('kill-http'))).not.toContain('t0k3n');
    // It never arrived, the operator decides: run it once more, on the server as it is now.
    const second = await startHttpNotes();
    const retried = resumeAgent({
      model, prompt: 'Charge.', session, retryToolCallIds: ['c1'],
      mcp: { servers: [{ name: 'notes', transport: { type: 'http', url: second.url } }], timeouts: { callMs: 2_000 } },
    });
    await second.chargeStarted;
    await second.kill();
    expect(await retried).toMatchObject({ status: 'stopped', reason: 'tool-reconciliation-required' });
    expect(second.effects).toEqual(['charge-started o-1']);
  });

  it('the run process is SIGKILLed mid-call: a resume from another process finds the unknown effect and settles it once', async () => {
    const { dir, effects } = world('kill-run');
    const path = join(dir, 'runs.sqlite');
    const server = fileURLToPath(new URL('./servers/notes.mjs', import.meta.url));
    const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', 'test/mcp/run-process.ts', JSON.stringify({ path, runId: 'kill-run', effects, server })], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    await until(() => charges(effectLines(effects)).length === 1, 30_000).catch((error) => {
      throw new Error(`${(error as Error).message}; the run process's stderr: ${stderr}`);
    });
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    const ops = createSqliteOpsStore({ path });
    try {
      const session = { store: ops.agentRuns, runId: 'kill-run', scope: 't' };
      const model = createMockModel({ responses: [{ text: 'Charged.' }] });
      const mcp = { servers: [notesServer(effects)] };
      const resumed = await resumeAgent({ model, prompt: 'Charge order o-1.', session, mcp });
      expect(resumed).toMatchObject({ status: 'stopped', reason: 'tool-reconciliation-required' });
      expect(resumed.status === 'stopped' && resumed.unknownEffects?.map((u) => u.toolCallId)).toEqual(['c1']);
      const settled = await resumeAgent({ model, prompt: 'Charge order o-1.', session, mcp, reconciledToolResults: [{ toolCallId: 'c1', output: 'charged' }] });
      expect(settled.status).toBe('completed');
      expect(charges(effectLines(effects))).toHaveLength(1);
    } finally {
      ops.close();
    }
  });
});

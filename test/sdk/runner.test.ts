/**
 * createRunner: a session carries the conversation, so the second turn's
 * model request holds the first; each turn is one revisioned write; a
 * session of another user, or an id that could leave the directory, is
 * refused before anything runs; a turn that waits for an approval is
 * appended once it has ended.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent, CairnError, SessionForeignError, SessionIdError, createFileSessionService, createInMemorySessionService, createRunner, tool,
  type SessionService,
} from 'cairn';
import { createMockModel } from 'cairn/testing';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A session service that counts its writes. */
function counting(inner: SessionService): SessionService & { writes: number } {
  const counted = {
    writes: 0,
    kind: inner.kind,
    getSession: inner.getSession.bind(inner),
    listSessions: inner.listSessions.bind(inner),
    deleteSession: inner.deleteSession.bind(inner),
    appendTurn: async (...args: Parameters<SessionService['appendTurn']>) => {
      counted.writes++;
      return inner.appendTurn(...args);
    },
  };
  return counted;
}

describe('createRunner', () => {
  it('carries the first turn into the second turn\'s model request, with one revisioned write per turn', async () => {
    const model = createMockModel({ responses: [{ text: 'Noted: short answers.' }, { text: 'Active.' }] });
    const agent = new Agent({ model, instructions: 'Keep replies short.' });
    const sessionService = counting(createInMemorySessionService());
    const runner = createRunner({ appName: 'support-copilot', agent, sessionService });
    const first = await runner.run({ userId: 'user_123', sessionId: 'demo', prompt: 'Remember that I prefer short answers.' });
    expect(first.session).toEqual({ appName: 'support-copilot', userId: 'user_123', sessionId: 'demo', revision: 1, turns: 1, appended: true });
    expect(sessionService.writes).toBe(1);
    const second = await runner.run({ userId: 'user_123', sessionId: first.session.sessionId, prompt: 'Summarize the account status.' });
    expect(second.outputText).toBe('Active.');
    expect(second.session).toMatchObject({ revision: 2, turns: 2, appended: true });
    expect(sessionService.writes).toBe(2);
    expect(model.calls[1]!.messages.map((m) => [m.role, m.content])).toEqual([
      ['system', 'Keep replies short.'],
      ['user', 'Remember that I prefer short answers.'],
      ['assistant', 'Noted: short answers.'],
      ['user', 'Summarize the account status.'],
    ]);
    const stored = await sessionService.getSession({ appName: 'support-copilot', userId: 'user_123', sessionId: 'demo' });
    expect(stored!.turns.map((t) => t.turnId)).toEqual([first.runId, second.runId]);
    // The system message is the agent's, not the conversation's: it is never stored in the session.
    expect(stored!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
  });

  it('makes a new session when none is named', async () => {
    const agent = new Agent({ model: createMockModel({ responses: [{ text: 'Hi.' }] }) });
    const runner = createRunner({ appName: 'app', agent, sessionService: createInMemorySessionService() });
    const result = await runner.run({ userId: 'u', prompt: 'Hello' });
    expect(result.session.sessionId).toMatch(/^[A-Za-z0-9_-]{10,}$/);
    expect(result.session.revision).toBe(1);
  });

  it('refuses another user\'s session and an id that could leave the directory, before any model call', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-runner-'));
    dirs.push(dir);
    const directory = join(dir, 'sessions');
    const model = createMockModel({ responses: [{ text: 'Yours.' }] });
    const runner = createRunner({ appName: 'app', agent: new Agent({ model }), sessionService: createFileSessionService({ directory }) });
    await runner.run({ userId: 'alice', sessionId: 's1', prompt: 'Hi' });
    const foreign = await runner.run({ userId: 'mallory', sessionId: 's1', prompt: 'What did alice say?' }).catch((e: unknown) => e);
    expect(SessionForeignError.isInstance(foreign)).toBe(true);
    for (const sessionId of ['../escape', 'a/b', '..', 'x\u0000y']) {
      const refused = await runner.run({ userId: 'alice', sessionId, prompt: 'Hi' }).catch((e: unknown) => e);
      expect(SessionIdError.isInstance(refused), sessionId).toBe(true);
      expect((refused as CairnError).code).toBe('session_id_invalid');
    }
    expect(model.calls).toHaveLength(1);
    expect(readdirSync(dir)).toEqual(['sessions']);
  });

  it('appends a turn that waited for an approval once its run has ended', async () => {
    const deploy = tool({
      name: 'deploy', schema: z.object({ target: z.string() }), requiresApproval: true, execute: ({ target }) => `live in ${target}`,
    });
    const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'deploy', args: { target: 'eu' } }] }, { text: 'Deployed.' }] });
    const sessionService = counting(createInMemorySessionService());
    const runner = createRunner({ appName: 'ops', agent: new Agent({ model, tools: [deploy] }), sessionService });
    const waiting = await runner.run({ userId: 'u', sessionId: 'd1', prompt: 'Deploy to eu.' });
    expect(waiting.status).toBe('suspended');
    expect(waiting.session).toMatchObject({ revision: 0, turns: 0, appended: false });
    expect(sessionService.writes).toBe(0);
    const pending = waiting.pendingApprovals[0]!;
    const done = await runner.run({
      userId: 'u', sessionId: 'd1', state: waiting.state,
      approvalResponses: [{ approvalId: pending.approvalId, approved: true, token: pending.token }],
    });
    expect(done.status).toBe('completed');
    expect(done.session).toMatchObject({ revision: 1, turns: 1, appended: true });
    const stored = await sessionService.getSession({ appName: 'ops', userId: 'u', sessionId: 'd1' });
    expect(stored!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(stored!.turns[0]!.turnId).toBe(waiting.runId);
  });

  it('keeps both turns of two runs on one session at once', async () => {
    const model = createMockModel({ strict: false, responses: [(request) => ({ text: `re: ${request.messages.at(-1)!.content}` })] });
    const sessionService = createInMemorySessionService();
    const runner = createRunner({ appName: 'app', agent: new Agent({ model }), sessionService });
    const [a, b] = await Promise.all([
      runner.run({ userId: 'u', sessionId: 'busy', prompt: 'one' }),
      runner.run({ userId: 'u', sessionId: 'busy', prompt: 'two' }),
    ]);
    const stored = await sessionService.getSession({ appName: 'app', userId: 'u', sessionId: 'busy' });
    expect(stored!.revision).toBe(2);
    expect(stored!.turns.map((t) => t.turnId).sort()).toEqual([a.runId, b.runId].sort());
    expect(stored!.messages.map((m) => m.content).sort()).toEqual(['one', 're: one', 're: two', 'two']);
  });

  it('refuses bad options', () => {
    const agent = new Agent({ model: createMockModel({ responses: [] }) });
    const sessionService = createInMemorySessionService();
    expect(() => createRunner({ appName: '', agent, sessionService })).toThrow(expect.objectContaining({ code: 'invalid_options' }));
    expect(() => createRunner({ appName: 'a', agent: {} as never, sessionService })).toThrow(expect.objectContaining({ code: 'invalid_options' }));
    expect(() => createRunner({ appName: 'a', agent, sessionService: {} as never })).toThrow(expect.objectContaining({ code: 'invalid_options' }));
  });
});

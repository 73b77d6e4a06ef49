/**
 * versionedMemory.extract on V3 runs: the intent in the terminal commit, the
 * claim, the session's commit, the acknowledgment, all saved before the
 * run's result resolves; a session.extract that throws keeps the run's status
 * and saves why; a crash at any save then a resume or reconcileAgentRun
 * applies the extraction once; legacy memory in a V3 run.
 */
import { describe, expect, it } from 'vitest';
import { reconcileAgentRun, resumeAgent, runAgent, streamAgent, type AgentRunStoreV3 } from 'cairn/agent';
import { createInMemoryChatStore } from 'cairn/chat';
import { createMockModel } from 'cairn/testing';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteAgentRunStoreV3, createSqliteOpsStore } from 'cairn/ops/sqlite';
import { countingMemoryStore, memorySession, recordingStoreV3 } from './versioned-helpers.js';
import { testMemory } from '../memory/run-helpers.js';

const OP = (runId: string) => `${runId}:memory:extract`;
const answer = () => createMockModel({ responses: [{ text: 'Noted: tea.' }] });

function sqliteRuns(): { store: AgentRunStoreV3; close(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-vx-'));
  const ops = createSqliteOpsStore({ path: join(dir, 'ops.sqlite') });
  return { store: createSqliteAgentRunStoreV3(ops), close: () => { ops.close(); rmSync(dir, { recursive: true, force: true }); } };
}

describe('versionedMemory.extract', () => {
  it('saves the intent in the terminal commit, then the claim, then the acknowledgment, before the result resolves', async () => {
    const memory = countingMemoryStore();
    const session = memorySession(memory);
    const runs = recordingStoreV3();
    const stream = streamAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'x', scope: 's' }, model: answer(), prompt: 'I prefer tea.',
      versionedMemory: { session, extract: true },
    });
    const events: string[] = [];
    for await (const e of stream.eventsV3) if (e.type === 'memory-intent') events.push(e.status);
    expect((await stream.result).status).toBe('completed');
    const tail = runs.saves.slice(-3);
    expect(tail.map((s) => [s.status, s.intents])).toEqual([
      ['completed', [`${OP('x')}=intended`]], ['completed', [`${OP('x')}=planned`]], ['completed', [`${OP('x')}=acknowledged`]],
    ]);
    expect(runs.saves.slice(0, -3).every((s) => s.intents.length === 0)).toBe(true);
    expect(events).toEqual(['intended', 'planned', 'acknowledged']);
    const record = (await runs.load('x'))!;
    const receipt = (await session.receipt(OP('x')))!;
    expect(record.memoryIntents).toHaveLength(1);
    expect(record.memoryIntents![0]).toMatchObject({
      operationId: OP('x'), kind: 'extract', status: 'acknowledged', messageIds: ['x:0', 'x:1'],
      requestDigest: receipt.requestDigest, planned: 1, receipt: { scopeRevision: receipt.scopeRevision, committedAt: receipt.committedAt },
    });
    expect(record.memoryIntents![0]).not.toHaveProperty('error');
    // The snapshot is the chart's as its save was made: restored, it would make the same save again.
    expect(record.memoryIntents![0]!.snapshot).toMatchObject({ status: 'active', value: { extract: 'acknowledging' } });
    const [hit] = await session.recall({ text: 'tea' });
    expect(hit!.record).toMatchObject({ origin: 'inferred', sources: [{ messageId: 'x:0' }] });
    expect(await session.resolveSource({ messageId: 'x:0' })).toMatchObject({ status: 'found', runId: 'x', index: 0 });
    expect(memory.applied).toEqual([OP('x')]);
  });

  it('extract.maxTurns reads only the run\'s latest turns, and a reconciliation claims the same', async () => {
    const runs = recordingStoreV3();
    const model = createMockModel({ strict: false, responses: [{ text: 'Let me see.', toolCalls: [{ toolName: 'look', args: {}, toolCallId: 'l' }] }, { text: 'Noted: tea.' }] });
    const memory = countingMemoryStore();
    const session = memorySession(memory, { llm: async () => { throw new Error('down'); } });
    await runAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'mt', scope: 's' }, model, prompt: 'I prefer tea.',
      tools: { look: { parameters: { type: 'object' }, execute: async () => 'ok' } }, versionedMemory: { session, extract: { maxTurns: 1 } },
    });
    const record = (await runs.load('mt'))!;
    // The input's user turn (0), then only the last assistant turn (3): the first turn (1) and the tool answer (2) are left out.
    expect(record.memoryIntents![0]).toMatchObject({ status: 'planned', messageIds: ['mt:0', 'mt:3'] });
    const working = memorySession(memory);
    expect(await reconcileAgentRun({ checkpointVersion: 3, session: { store: runs, runId: 'mt', scope: 's' }, versionedMemory: { session: working } }))
      .toEqual({ runId: 'mt', memoryIntents: [OP('mt')] });
    expect((await runs.load('mt'))!.memoryIntents![0]).toMatchObject({ status: 'acknowledged', messageIds: ['mt:0', 'mt:3'] });
  });

  it('a run that did not complete extracts nothing', async () => {
    const memory = countingMemoryStore();
    const runs = recordingStoreV3();
    const result = await runAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'st', scope: 's' }, prompt: 'I prefer tea.',
      model: createMockModel({ responses: [{ text: 'x', finishReason: 'length' }] }),
      versionedMemory: { session: memorySession(memory), extract: true },
    });
    expect(result.status).toBe('stopped');
    expect((await runs.load('st'))!.memoryIntents).toEqual([]);
    expect(memory.calls).toBe(0);
  });

  it('cites a stored chat\'s own id for an input message the run continued', async () => {
    const chats = createInMemoryChatStore();
    const first = { role: 'user' as const, content: 'I prefer tea.' };
    await chats.saveChat('chat-1', { chatId: 'chat-1', scope: { userId: 'ada' }, messages: [first], messageIds: ['m-1'] });
    const session = memorySession(countingMemoryStore(), { chats });
    const runs = recordingStoreV3();
    await runAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'ch', scope: 's' }, model: answer(), messages: [first],
      chat: { store: chats, chatId: 'chat-1', scope: { userId: 'ada' } }, versionedMemory: { session, extract: true },
    });
    const record = (await runs.load('ch'))!;
    expect(record.memoryIntents![0]).toMatchObject({ status: 'acknowledged', messageIds: ['m-1', 'ch:1'] });
    const [hit] = await session.recall({ text: 'tea' });
    expect(hit!.record.sources).toEqual([{ messageId: 'm-1' }]);
    expect(await session.resolveSource({ messageId: 'm-1' }, { chatId: 'chat-1' } as never)).toMatchObject({ status: 'found', message: first });
  });

  it('a session.extract that throws saves why on the intent and keeps the run\'s status; reconcileAgentRun settles it', async () => {
    const memory = countingMemoryStore();
    let down = true;
    const session = memorySession(memory, {
      llm: async () => {
        if (down) throw Object.assign(new Error('memory LLM down'), { code: 'llm_down' });
        return '{"facts":[{"text":"Ada prefers tea.","sources":["s0"]}]}';
      },
    });
    const runs = recordingStoreV3();
    const sessionOf = { store: runs, runId: 'e', scope: 's' };
    const result = await runAgent({ checkpointVersion: 3, session: sessionOf, model: answer(), prompt: 'I prefer tea.', versionedMemory: { session, extract: true } });
    expect(result.status).toBe('completed');
    const record = (await runs.load('e'))!;
    expect(record.status).toBe('completed');
    expect(record.memoryIntents![0]).toMatchObject({ status: 'planned', messageIds: ['e:0', 'e:1'], error: { name: 'Error', message: 'memory LLM down', code: 'llm_down' } });
    expect(memory.applied).toEqual([]);
    down = false;
    expect(await reconcileAgentRun({ checkpointVersion: 3, session: sessionOf, versionedMemory: { session } })).toEqual({ runId: 'e', memoryIntents: [OP('e')] });
    const settled = (await runs.load('e'))!;
    expect(settled.memoryIntents![0]).toMatchObject({ status: 'acknowledged', planned: 1 });
    expect(settled.memoryIntents![0]).not.toHaveProperty('error');
    expect(memory.applied).toEqual([OP('e')]);
  });

  it('a memory LLM citing a message the request does not have: the intent keeps memory_source_unknown, nothing is written', async () => {
    const memory = countingMemoryStore();
    const session = memorySession(memory, { llm: async () => '{"facts":[{"text":"Ada prefers tea.","sources":["s9"]}]}' });
    const runs = recordingStoreV3();
    const result = await runAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'u', scope: 's' }, model: answer(), prompt: 'I prefer tea.', versionedMemory: { session, extract: true },
    });
    expect(result.status).toBe('completed');
    expect((await runs.load('u'))!.memoryIntents![0]).toMatchObject({ status: 'planned', error: { name: 'MemoryError', code: 'memory_source_unknown' } });
    expect(memory.calls).toBe(0);
    expect(await memory.list({ scope: { userId: 'ada' } })).toEqual([]);
  });

  it.each([['in memory', () => ({ store: undefined as AgentRunStoreV3 | undefined, close: () => undefined })], ['SQLite', sqliteRuns]])(
    'a crash at any save (%s), then a resume or reconcileAgentRun: the extraction is applied once and acknowledged',
    async (_name, open) => {
      const probe = recordingStoreV3();
      await runAgent({ checkpointVersion: 3, session: { store: probe, runId: 'p', scope: 's' }, model: answer(), prompt: 'I prefer tea.', versionedMemory: { session: memorySession(countingMemoryStore()), extract: true } });
      for (let n = 1; n <= probe.saves.length; n++) {
        const opened = open();
        try {
          const memory = countingMemoryStore();
          const session = memorySession(memory);
          const runs = recordingStoreV3(opened.store);
          runs.failSave(n);
          const sessionOf = { store: runs, runId: `c${n}`, scope: 's' };
          const base = { checkpointVersion: 3 as const, session: sessionOf, versionedMemory: { session, extract: true } };
          const first = await runAgent({ ...base, model: answer(), prompt: 'I prefer tea.' });
          // The run's result stands once its terminal commit landed, whatever the extraction's saves did.
          if (n >= probe.saves.length - 1) expect(first.status, `crash at save ${n}`).toBe('completed');
          const stored = await runs.load(`c${n}`);
          if (!stored) await runAgent({ ...base, model: answer(), prompt: 'I prefer tea.' });
          else if (stored.status !== 'completed') await resumeAgent({ ...base, model: answer() });
          const settled = await reconcileAgentRun({ checkpointVersion: 3, session: sessionOf, versionedMemory: { session } });
          const record = (await runs.load(`c${n}`))!;
          expect(record.status, `crash at save ${n}`).toBe('completed');
          expect(record.memoryIntents!.map((i) => i.status), `crash at save ${n}`).toEqual(['acknowledged']);
          expect(memory.applied, `crash at save ${n}`).toEqual([OP(`c${n}`)]);
          expect((await session.recall({ text: 'tea' })).length).toBe(1);
          // Only a crash after the terminal commit leaves an intent for the reconciliation.
          if (n >= probe.saves.length - 1) expect(settled.memoryIntents, `crash at save ${n}`).toEqual([OP(`c${n}`)]);
        } finally {
          opened.close();
        }
      }
    },
  );

  it('the lost acknowledgment: the commit landed, its save did not; reconcileAgentRun reads the receipt back and commits nothing', async () => {
    const memory = countingMemoryStore();
    const session = memorySession(memory);
    const probe = recordingStoreV3();
    await runAgent({ checkpointVersion: 3, session: { store: probe, runId: 'p', scope: 's' }, model: answer(), prompt: 'I prefer tea.', versionedMemory: { session: memorySession(countingMemoryStore()), extract: true } });
    const runs = recordingStoreV3();
    runs.failSave(probe.saves.length);
    const sessionOf = { store: runs, runId: 'l', scope: 's' };
    const result = await runAgent({ checkpointVersion: 3, session: sessionOf, model: answer(), prompt: 'I prefer tea.', versionedMemory: { session, extract: true } });
    expect(result.status).toBe('completed');
    expect((await runs.load('l'))!.memoryIntents![0]!.status).toBe('planned');
    expect(memory.calls).toBe(1);
    expect(await reconcileAgentRun({ checkpointVersion: 3, session: sessionOf, versionedMemory: { session } })).toEqual({ runId: 'l', memoryIntents: [OP('l')] });
    expect(memory.calls).toBe(1);
    expect((await runs.load('l'))!.memoryIntents![0]!.status).toBe('acknowledged');
    expect(await reconcileAgentRun({ checkpointVersion: 3, session: sessionOf, versionedMemory: { session } })).toEqual({ runId: 'l' });
  });

  it('refuses extract beside legacy memory, extract with messages, and malformed extraction options', async () => {
    const runs = recordingStoreV3();
    const session = memorySession(countingMemoryStore());
    const base = { checkpointVersion: 3 as const, session: { store: runs, runId: 'r', scope: 's' }, model: answer(), prompt: 'hi' };
    const results = [
      await runAgent({ ...base, memory: testMemory(), versionedMemory: { session, extract: true } }),
      await runAgent({ ...base, versionedMemory: { session, extract: { messages: [] } as never } }),
      await runAgent({ ...base, versionedMemory: { session, extract: { maxTurns: 0 } } }),
      await runAgent({ ...base, versionedMemory: { session, extract: 'yes' as never } }),
    ];
    for (const r of results) expect(r.status === 'failed' && r.error.code).toBe('invalid_options');
    expect(runs.saves).toEqual([]);
    await expect(reconcileAgentRun({ checkpointVersion: 3, session: base.session, versionedMemory: { session: {} as never } })).rejects.toMatchObject({ code: 'invalid_options' });
  });

  it('legacy memory works in a V3 run as in a V2 run', async () => {
    const memory = testMemory();
    const runs = recordingStoreV3();
    const result = await runAgent({ checkpointVersion: 3, session: { store: runs, runId: 'lg', scope: 's' }, model: answer(), prompt: 'I prefer tea.', memory });
    expect(result.status).toBe('completed');
    const record = (await runs.load('lg'))!;
    expect(record.version).toBe(3);
    expect(record.memory?.extraction).toMatchObject({ status: 'completed', planned: 1, mutations: 1 });
    expect((await memory.store.list({ scope: { userId: 'ada' } })).map((r) => r.text)).toEqual(['prefers tea']);
    expect(await reconcileAgentRun({ checkpointVersion: 3, session: { store: runs, runId: 'lg', scope: 's' }, memory })).toEqual({ runId: 'lg', memory: 'completed' });
  });

  it('a legacy extraction that wrote part of its plan is stored partial with the warning, and reconciles as failed in the 2.3 shape', async () => {
    const inner = testMemory().store;
    let adds = 0;
    const store = {
      ...inner,
      add: async (input: Parameters<typeof inner.add>[0]) => {
        if (++adds === 2) throw new Error('memory store went away');
        return inner.add(input);
      },
    };
    const memory = testMemory({ store, events: '{"memory":[{"event":"ADD","text":"prefers tea"},{"event":"ADD","text":"lives in Oslo"}]}' });
    const runs = recordingStoreV3();
    const session = { store: runs, runId: 'lp', scope: 's' };
    const result = await runAgent({ checkpointVersion: 3, session, model: answer(), prompt: 'I prefer tea and live in Oslo.', memory });
    expect(result.status).toBe('completed');
    const record = (await runs.load('lp'))!;
    expect(record.version).toBe(3);
    expect(record.memory?.extraction).toMatchObject({ status: 'partial', planned: 2, mutations: 1, error: { code: 'memory_extraction_partial' } });
    expect((record.result as { warnings?: unknown[] }).warnings).toEqual([expect.objectContaining({ type: 'warning', setting: 'memory', code: 'memory_extraction_partial' })]);
    const settled = await reconcileAgentRun({ checkpointVersion: 3, session, memory });
    expect(settled).toMatchObject({ runId: 'lp', memory: 'failed', warnings: [{ type: 'warning', setting: 'memory', code: 'memory_extraction_partial' }] });
    expect(adds).toBe(2);
  });
});

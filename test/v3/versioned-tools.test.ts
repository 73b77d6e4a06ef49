/**
 * versionedMemory.tools on V3 runs: the session's four tools through the one
 * tool path, each write's intent moving with its tool receipt in the same
 * save, and a crash at any save then a resume applying the write once.
 */
import { describe, expect, it } from 'vitest';
import { resumeAgent, runAgent, streamAgent } from 'cairn/agent';
import { createMockModel, type MockTurn } from 'cairn/testing';
import { countingMemoryStore, memorySession, recordingStoreV3, rememberingModel } from './versioned-helpers.js';

const OP = 'v1:memory:0:c1';

describe('versionedMemory.tools', () => {
  it('offers the four tools; the write intent moves with its receipt, with no save of its own', async () => {
    const memory = countingMemoryStore();
    const session = memorySession(memory);
    const runs = recordingStoreV3();
    const model = rememberingModel();
    const stream = streamAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'v1', scope: 's' }, model, prompt: 'I prefer tea.',
      versionedMemory: { session, tools: true },
    });
    const events: string[] = [];
    for await (const e of stream.eventsV3) if (e.type === 'memory-intent') events.push(`${e.operationId}=${e.status}`);
    const result = await stream.result;
    expect(result.status).toBe('completed');
    expect(model.calls[0]!.tools!.map((t) => t.name)).toEqual(['memory_remember', 'memory_recall', 'memory_revise', 'memory_retract']);
    // Each save that carries the tool's receipt carries its intent at the matching status, and no save carries one alone.
    const withIntent = runs.saves.filter((s) => s.intents.length > 0);
    const pairs = withIntent.map((s) => [s.receipts[0], s.intents[0]]);
    expect(pairs.slice(0, 2)).toEqual([['memory_remember:executing', `${OP}=intended`], ['memory_remember:completed', `${OP}=acknowledged`]]);
    expect(pairs.slice(2).every(([r, i]) => r === 'memory_remember:completed' && i === `${OP}=acknowledged`)).toBe(true);
    expect(runs.saves.every((s) => (s.receipts.length > 0) === (s.intents.length > 0))).toBe(true);
    expect(events).toEqual([`${OP}=intended`, `${OP}=acknowledged`]);
    const record = (await runs.load('v1'))!;
    expect(record.memoryIntents).toMatchObject([{ operationId: OP, kind: 'tool', status: 'acknowledged', planned: 1, receipt: { scopeRevision: 1 } }]);
    expect(memory.applied).toEqual([OP]);
    expect((await session.recall({ text: 'tea' }))[0]!.record).toMatchObject({ text: 'Ada prefers tea.', origin: 'explicit', operationId: OP });
  });

  it('adds no save to the run beyond the tool receipt\'s own', async () => {
    const plain = recordingStoreV3();
    await runAgent({
      checkpointVersion: 3, session: { store: plain, runId: 'v1', scope: 's' }, model: rememberingModel(), prompt: 'hi',
      tools: { memory_remember: { parameters: { type: 'object' }, replay: 'idempotent', execute: async () => ({ ok: true }) } },
    });
    const runs = recordingStoreV3();
    await runAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'v1', scope: 's' }, model: rememberingModel(), prompt: 'hi',
      versionedMemory: { session: memorySession(countingMemoryStore()), tools: true },
    });
    expect(runs.saves.length).toBe(plain.saves.length);
  });

  it('a tool write that throws fails its intent with the reason; nothing is written', async () => {
    const memory = countingMemoryStore();
    const runs = recordingStoreV3();
    const result = await runAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'v2', scope: 's' }, prompt: 'change it',
      model: rememberingModelFor('memory_revise', { id: 'nope', text: 'x' }),
      versionedMemory: { session: memorySession(memory), tools: true },
    });
    expect(result.status).toBe('completed');
    const [intent] = (await runs.load('v2'))!.memoryIntents!;
    expect(intent).toMatchObject({ operationId: 'v2:memory:0:c1', status: 'failed', error: { name: 'MemoryError', code: 'memory_record_not_found' } });
    expect(memory.applied).toEqual([]);
  });

  it('a commit that landed but answered with a throw: the call answers its stored receipt, and the intent is acknowledged', async () => {
    const memory = countingMemoryStore();
    const commit = memory.commit;
    memory.commit = async (input) => {
      await commit(input);
      throw new Error('connection reset after the commit');
    };
    const runs = recordingStoreV3();
    await runAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'la', scope: 's' }, model: rememberingModel(), prompt: 'hi',
      versionedMemory: { session: memorySession(memory), tools: true },
    });
    const record = (await runs.load('la'))!;
    // The model is told the write landed (it would otherwise write the fact again under a new call).
    expect(Object.values(record.receipts).map((r) => r.status)).toEqual(['completed']);
    const told = (record.snapshot as { context: { messages: { role: string; content: unknown }[] } }).context.messages.find((m) => m.role === 'tool');
    expect(JSON.stringify(told?.content)).toContain('"replayed":true');
    expect(record.memoryIntents![0]).toMatchObject({ status: 'acknowledged', planned: 1 });
    expect(memory.applied).toEqual(['la:memory:0:c1']);
  });

  it('the write hands its receipt to the save of its tool receipt: acknowledged there, with no read of the memory store', async () => {
    const memory = countingMemoryStore();
    const read = memory.receipt;
    let reads = 0;
    memory.receipt = async (input) => {
      reads++;
      return read(input);
    };
    const runs = recordingStoreV3();
    const result = await runAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'rb', scope: 's' }, model: rememberingModel(), prompt: 'hi',
      versionedMemory: { session: memorySession(memory), tools: true },
    });
    expect(result.status).toBe('completed');
    const completed = runs.saves.filter((s) => s.receipts[0] === 'memory_remember:completed');
    expect(completed[0]!.intents).toEqual(['rb:memory:0:c1=acknowledged']);
    expect(reads).toBe(0);
    expect(memory.applied).toEqual(['rb:memory:0:c1']);
    // A settled tool intent keeps its entry and not its chart's snapshot (the head every later save rewrites stays small).
    const [intent] = (await runs.load('rb'))!.memoryIntents!;
    expect(intent).toMatchObject({ operationId: 'rb:memory:0:c1', kind: 'tool', status: 'acknowledged', planned: 1 });
    expect(intent).not.toHaveProperty('snapshot');
  });

  it('a crash at any save, then a resume: the write is applied once and its intent acknowledged', async () => {
    const probe = recordingStoreV3();
    await runAgent({
      checkpointVersion: 3, session: { store: probe, runId: 'p', scope: 's' }, model: rememberingModel(), prompt: 'hi',
      versionedMemory: { session: memorySession(countingMemoryStore()), tools: true },
    });
    for (let n = 1; n <= probe.saves.length; n++) {
      const memory = countingMemoryStore();
      const session = memorySession(memory);
      const runs = recordingStoreV3();
      runs.failSave(n);
      const base = { checkpointVersion: 3 as const, session: { store: runs, runId: `c${n}`, scope: 's' }, versionedMemory: { session, tools: true } };
      const first = await runAgent({ ...base, model: rememberingModel(), prompt: 'hi' });
      if (first.status !== 'completed') {
        const stored = await runs.load(`c${n}`);
        if (stored) await resumeAgent({ ...base, model: rememberingModel() });
        else await runAgent({ ...base, model: rememberingModel(), prompt: 'hi' });
      }
      const record = (await runs.load(`c${n}`))!;
      expect(record.status, `crash at save ${n}`).toBe('completed');
      expect(record.memoryIntents?.map((i) => i.status), `crash at save ${n}`).toEqual(['acknowledged']);
      expect(memory.applied, `crash at save ${n}`).toEqual([`c${n}:memory:0:c1`]);
      expect((await session.recall({ text: 'tea' })).length, `crash at save ${n}`).toBe(1);
    }
  });

  it('two writes in one batch, then a revise and a retract: each intent acknowledged, each change applied once', async () => {
    const memory = countingMemoryStore();
    const session = memorySession(memory);
    const runs = recordingStoreV3();
    let turn = 0;
    const model = createMockModel({
      strict: false,
      responses: [(): MockTurn => {
        turn++;
        if (turn === 1) {
          return { toolCalls: [
            { toolName: 'memory_remember', args: { text: 'Ada prefers tea.' }, toolCallId: 'a' },
            { toolName: 'memory_remember', args: { text: 'Ada lives in Oslo.' }, toolCallId: 'b' },
          ] };
        }
        if (turn === 2) {
          return { toolCalls: [
            { toolName: 'memory_revise', args: { id: 'r1', text: 'Ada prefers green tea.' }, toolCallId: 'c' },
            { toolName: 'memory_retract', args: { id: 'r2' }, toolCallId: 'd' },
          ] };
        }
        return { text: 'done' };
      }],
    });
    const result = await runAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'b', scope: 's' }, model, prompt: 'hi', versionedMemory: { session, tools: true },
    });
    expect(result.status).toBe('completed');
    const record = (await runs.load('b'))!;
    expect(record.memoryIntents!.map((i) => `${i.operationId}=${i.status}`)).toEqual([
      'b:memory:0:a=acknowledged', 'b:memory:0:b=acknowledged', 'b:memory:1:c=acknowledged', 'b:memory:1:d=acknowledged',
    ]);
    expect(memory.applied).toEqual(['b:memory:0:a', 'b:memory:0:b', 'b:memory:1:c', 'b:memory:1:d']);
    expect((await session.recall({ text: 'Ada' })).map((h) => h.record.text)).toEqual(['Ada prefers green tea.']);
  });

  it('refuses a tool name the run has, a session that is not one, and a resume under another memory scope', async () => {
    const runs = recordingStoreV3();
    const session = memorySession(countingMemoryStore());
    const clash = await runAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'r', scope: 's' }, model: rememberingModel(), prompt: 'hi',
      tools: { memory_recall: { parameters: { type: 'object' }, execute: async () => 1 } }, versionedMemory: { session, tools: true },
    });
    const notSession = await runAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'r', scope: 's' }, model: rememberingModel(), prompt: 'hi',
      versionedMemory: { session: { scope: {} } as never },
    });
    const badTools = await runAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'r', scope: 's' }, model: rememberingModel(), prompt: 'hi',
      versionedMemory: { session, tools: 'yes' as never },
    });
    for (const r of [clash, notSession, badTools]) expect(r.status === 'failed' && r.error.code).toBe('invalid_options');
    expect(runs.saves).toEqual([]);
    // A run suspended on an approval, resumed with a session of another scope.
    await runAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'b', scope: 's' }, prompt: 'hi', versionedMemory: { session, tools: true },
      model: rememberingModelFor('gate', {}), tools: { gate: { parameters: { type: 'object' }, needsApproval: true, execute: async () => 1 } },
    });
    expect((await runs.load('b'))!.status).toBe('suspended');
    const other = memorySession(countingMemoryStore(), { scope: { userId: 'bob' } });
    const resumed = await resumeAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'b', scope: 's' }, model: rememberingModel(), versionedMemory: { session: other, tools: true },
      tools: { gate: { parameters: { type: 'object' }, needsApproval: true, execute: async () => 1 } },
    });
    expect(resumed.status === 'failed' && resumed.error).toMatchObject({ name: 'BindingChangedError', code: 'binding_changed' });
    // Without versionedMemory at all: the stored intents would be dropped, so that is a changed binding too.
    const without = await resumeAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'b', scope: 's' }, model: rememberingModel(),
      tools: { gate: { parameters: { type: 'object' }, needsApproval: true, execute: async () => 1 }, ...session.tools({ runId: 'b' }) },
    });
    expect(without.status === 'failed' && without.error).toMatchObject({ name: 'BindingChangedError', code: 'binding_changed' });
    expect((await runs.load('b'))!.status).toBe('suspended');
  });
});

/** A model that calls `toolName` once (call c1), then answers. */
function rememberingModelFor(toolName: string, args: { [key: string]: string }) {
  return createMockModel({
    strict: false,
    responses: [(request) => (request.messages.some((m) => m.role === 'tool') ? { text: 'done' } : { toolCalls: [{ toolName, args, toolCallId: 'c1' }] })],
  });
}

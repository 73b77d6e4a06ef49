/**
 * The in-memory store does not compare the parts of an engine envelope's
 * transcript and ended receipts it already holds: the engine only appends to
 * those lists, so a save copies what the step added and its cost does not grow
 * with the run's history. Whatever path a save takes, a load must give exactly
 * what JSON would have carried, and a refused save must leave the stored run
 * as it was. fast-check prints the seed of a failure; FC_SEED replays it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentRunEnvelope, type AgentRunStore, type AgentToolReceipt,
} from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { lazyReceipts, unbuiltReceiptsOf } from '../../src/agent/envelope.js';

const seed = process.env.FC_SEED;
const params = { numRuns: 200, ...(seed !== undefined && seed !== '' ? { seed: Number(seed) } : {}) };
const json = (value: unknown) => JSON.parse(JSON.stringify(value));

interface Parts {
  messages: unknown[];
  receipts: AgentToolReceipt[];
  open: AgentToolReceipt[];
  step: number;
  machineVersion: number;
}

/** An envelope as the engine hands one over: the receipts record unbuilt, built from the ended and open lists. */
function engineEnvelope(revision: number, parts: Parts, extra: Record<string, unknown> = {}): AgentRunEnvelope {
  const envelope = {
    kind: 'cairn-agent-run', version: 1, runId: 'r', scope: 's', revision, bindingId: null,
    binding: {} as AgentRunEnvelope['binding'], machine: { id: 'run', version: parts.machineVersion },
    snapshot: { status: 'active', value: 'loop', context: { step: parts.step, messages: parts.messages, receipts: parts.receipts, ...extra } } as never,
    receipts: {}, approvalRequestCounts: {}, approvals: {}, status: 'running', pendingApprovals: [], pendingClientCalls: [],
    createdAt: 1, updatedAt: revision,
  } as AgentRunEnvelope;
  return lazyReceipts(envelope, parts.receipts, parts.open);
}

const receipt = (step: number, call: number, status: AgentToolReceipt['status'] = 'completed'): AgentToolReceipt => ({
  key: `r:${step}:${call}`, modelStep: step, toolCallId: `c${step}-${call}`, toolName: 'step', status, idempotent: false,
  ...(status === 'completed' ? { rawResult: { ok: step, pad: 'x'.repeat(step % 7) }, modelOutput: `ok ${step}` } : {}),
});

/** An object that counts how often its `content` is read. */
function countedMessage(counter: { reads: number }, content: string) {
  const message: Record<string, unknown> = { role: 'user' };
  Object.defineProperty(message, 'content', {
    enumerable: true,
    get() {
      counter.reads += 1;
      return content;
    },
  });
  return message;
}

describe('the in-memory store and an engine envelope', () => {
  it('a save reads only the parts the step added, not the ones stored before', async () => {
    const counter = { reads: 0 };
    const old = countedMessage(counter, 'old');
    const parts: Parts = { messages: [{ role: 'system', content: 's' }, old, { role: 'assistant', content: 'a' }], receipts: [], open: [], step: 1, machineVersion: 1 };
    const store = createInMemoryAgentRunStore();
    await store.save(engineEnvelope(1, parts));
    expect(counter.reads).toBe(1);
    for (let revision = 2; revision <= 50; revision++) {
      parts.messages = parts.messages.concat([{ role: 'tool', content: `t${revision}` }, { role: 'assistant', content: `a${revision}` }]);
      parts.receipts = parts.receipts.concat([receipt(revision, 0)]);
      parts.step = revision;
      await store.save(engineEnvelope(revision, parts));
    }
    expect(counter.reads).toBe(1);
    const loaded = await store.load('r');
    expect(loaded).toEqual(json(engineEnvelope(50, parts)));
    expect((loaded!.snapshot as { context: { messages: { content: string }[] } }).context.messages[1]!.content).toBe('old');

    // The same lists handed over as new objects (a resumed run's first save): compared part by part, and still right.
    parts.messages = json(parts.messages);
    await store.save(engineEnvelope(51, parts));
    expect(await store.load('r')).toEqual(json(engineEnvelope(51, parts)));
  });

  it('a caller\'s own envelope (not the engine\'s) is still compared part by part', async () => {
    const counter = { reads: 0 };
    const messages: unknown[] = [countedMessage(counter, 'old')];
    const envelope = (revision: number) => ({ ...json(engineEnvelope(revision, { messages: [], receipts: [], open: [], step: 0, machineVersion: 1 })), snapshot: { status: 'active', value: 'loop', context: { messages } } }) as AgentRunEnvelope;
    const store = createInMemoryAgentRunStore();
    await store.save(envelope(1));
    messages.push({ role: 'assistant', content: 'a' });
    await store.save(envelope(2));
    expect(counter.reads).toBe(2);
  });

  it('whatever the saves, a load gives what JSON carries and a refused save changes nothing (property)', async () => {
    type Op =
      | { kind: 'step'; messages: number; receipts: number }
      | { kind: 'fresh' }
      | { kind: 'migrate' }
      | { kind: 'open'; on: boolean }
      | { kind: 'conflict' }
      | { kind: 'cycle' };
    const op: fc.Arbitrary<Op> = fc.oneof(
      { weight: 6, arbitrary: fc.record({ kind: fc.constant('step' as const), messages: fc.nat({ max: 3 }), receipts: fc.nat({ max: 2 }) }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'fresh' as const }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'migrate' as const }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('open' as const), on: fc.boolean() }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'conflict' as const }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'cycle' as const }) },
    );
    await fc.assert(fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 30 }), async (ops) => {
      const store = createInMemoryAgentRunStore();
      const parts: Parts = { messages: [], receipts: [], open: [], step: 0, machineVersion: 1 };
      let revision = 0;
      let stored: unknown = undefined;
      let n = 0;
      for (const o of ops) {
        let extra: Record<string, unknown> = {};
        let refused: 'conflict' | 'cycle' | null = null;
        if (o.kind === 'step') {
          parts.step += 1;
          const added = Array.from({ length: o.messages }, () => ({ role: n % 2 ? 'tool' : 'assistant', content: `m${n++}`, ...(n % 5 === 0 ? { meta: { n, gone: undefined } } : {}) }));
          parts.messages = parts.messages.concat(added);
          parts.receipts = parts.receipts.concat(Array.from({ length: o.receipts }, (_, i) => receipt(parts.step, i)));
        } else if (o.kind === 'fresh') {
          // A resumed run: equal lists, every part a new object.
          parts.messages = json(parts.messages);
          parts.receipts = json(parts.receipts);
        } else if (o.kind === 'migrate') {
          // A migrated machine may rewrite a part in the middle of its lists, ends kept.
          parts.machineVersion += 1;
          if (parts.messages.length > 2) parts.messages = parts.messages.map((m, i) => (i === 1 ? { role: 'user', content: `rewritten ${n++}` } : m));
        } else if (o.kind === 'open') {
          parts.open = o.on ? [receipt(parts.step + 1, 0, 'executing')] : [];
        } else if (o.kind === 'conflict') {
          // A step whose save is refused (its revision skips one): what it added must not reach the stored run.
          parts.messages = parts.messages.concat([{ role: 'assistant', content: `refused ${n++}` }]);
          refused = 'conflict';
        } else {
          const cyclic: Record<string, unknown> = { role: 'tool' };
          cyclic.self = cyclic;
          extra = { pending: [cyclic] };
          parts.messages = parts.messages.concat([cyclic]);
          refused = 'cycle';
        }
        const envelope = engineEnvelope(refused === 'conflict' ? revision + 2 : revision + 1, parts, extra);
        if (refused === null) {
          await store.save(envelope);
          // The save took the lists, not the record (which JSON below builds).
          expect(unbuiltReceiptsOf(envelope)).toBeDefined();
          revision += 1;
          stored = json(envelope);
        } else {
          if (refused === 'conflict') await expect(store.save(envelope)).rejects.toMatchObject({ code: 'revision_conflict' });
          else await expect(store.save(envelope)).rejects.toThrow(TypeError);
          parts.messages = parts.messages.slice(0, -1);
        }
        expect(await store.load('r')).toEqual(stored);
      }
    }), params);
  });

  it('a tool loop that suspends and resumes: every save loads back as the envelope saved', async () => {
    const inner = createInMemoryAgentRunStore();
    const checked: number[] = [];
    const store: AgentRunStore = {
      load: (runId, options) => inner.load(runId, options),
      async save(envelope, options) {
        await inner.save(envelope, options);
        expect(await inner.load(envelope.runId)).toEqual(json(envelope));
        checked.push(envelope.revision);
      },
    };
    let n = 0;
    const responses = [() => (n < 6 ? { toolCalls: [{ toolName: n === 3 ? 'pay' : 'step', args: { n }, toolCallId: `c${n++}` }] } : { text: 'done' })];
    const tools = {
      step: { parameters: { type: 'object' }, execute: (args: { n: number }) => ({ ok: args.n }) },
      pay: { parameters: { type: 'object' }, needsApproval: true, execute: () => ({ paid: true }) },
    };
    const session = { store, runId: 'loop', scope: 's' };
    const first = await runAgent({ model: createMockModel({ strict: false, responses }), prompt: 'Loop.', tools, session });
    if (first.status !== 'suspended') throw new Error(`expected a suspended run, got ${first.status}`);
    const [pending] = first.pendingApprovals;
    const done = await resumeAgent({
      model: createMockModel({ strict: false, responses }), prompt: 'Loop.', tools, session,
      approvalResponses: [{ approvalId: pending!.approvalId, token: pending!.token, approved: true }],
    });
    expect(done.status).toBe('completed');
    expect(checked.length).toBeGreaterThan(12);
    const loaded = (await inner.load('loop'))!;
    expect((loaded.snapshot as { context: { messages: unknown[] } }).context.messages).toEqual(json(done.messages));
    expect(Object.keys(loaded.receipts)).toHaveLength(6);
  });
});

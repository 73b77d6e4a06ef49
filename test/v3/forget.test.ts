/**
 * Forget in the V3 run stores (docs/forget.md): redactForgotten rewrites, in
 * place, every stored copy of a redacted package's retrieval block (the
 * history in the checkpoint, a terminal run's result.messages) into a
 * stand-in that keeps the marker; the run keeps its revision and its
 * last-save time; only the compiler's exact blocks are replaced; a later
 * save of a run pointing to a redacted package stores stand-ins; a resume
 * drops them and compiles the step again. On the in-memory, SQLite and
 * PostgreSQL stores alike.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  contextBlobDigest, createInMemoryAgentRunStoreV3, resumeAgent, runAgent,
  type AgentRunEnvelopeV3, type AgentRunStoreV3, type ContextBlobInput, type JsonValue, type Message,
} from 'cairn/agent';
import type { ContextHit, ContextManifest } from 'cairn/context';
import { createSqliteAgentRunStoreV3, createSqliteOpsStore, type SqliteOpsStore } from 'cairn/ops/sqlite';
import { createPostgresAgentRunStoreV3, type PostgresAgentRunStoreV3 } from 'cairn/ops/postgres';
import { createMockModel, v3TestEnvelope } from 'cairn/testing';
import { describePostgres } from '../stores/pg-env.js';
import { dropRedactedBlocks, shapeMatcher } from '../../src/v3/forget.js';

const SECRET = 'zebra-quartz-1147';
const standIn = (pass: number, step: number) => `<cairn_context pass="${pass}" step="${step}">\n[forgotten]\n</cairn_context>`;
const m1 = { recordId: 'm-1', revision: 1 };

/** A memory source whose records the test changes (a forgotten one is no longer retrieved). */
function memorySource(hits: ContextHit[]) {
  return { name: 'mem', retrieve: () => hits.map((h) => ({ ...h })) };
}
const secretHit = (): ContextHit => ({ text: SECRET, index: 0, id: 'm-1', revision: 1, score: 0.9 });
const docHit = (): ContextHit => ({ text: 'Deploys need CI.', index: 1, id: 'd-1', score: 0.5 });

const contentsOf = (messages: unknown) => (messages as Message[]).map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
const messagesOf = (record: AgentRunEnvelopeV3) => (record.snapshot as { context: { messages: Message[] } }).context.messages;

/** A package of one retrieval block holding m-1 and d-1, and its step's manifest, as the compiler makes them. */
function crafted() {
  const blocks: JsonValue[] = [{
    kind: 'retrieval', source: 'mem',
    records: [{ id: 'm-1', index: 0, text: SECRET, revision: 1 }, { id: 'd-1', index: 1, text: 'Deploys need CI.' }],
  }];
  const digest = contextBlobDigest(blocks);
  const manifest = {
    version: 1, step: 0, phase: 'loop', refresh: 'initial', pass: 0, digest, messagesDigest: 'sha256:00',
    model: { provider: 'mock', modelId: 'm' }, tools: [],
    blocks: [{ kind: 'retrieval', source: 'mem', records: 2, tokens: 9 }],
    placement: { retrieval: 'appended', workingMemory: 'none', tailKept: false },
    tokens: { estimated: 20, window: null, package: 9 },
  };
  const exact = `<cairn_context pass="0" step="0">\n[mem m-1] ${SECRET}\n[mem d-1] Deploys need CI.\n</cairn_context>`;
  const blob: ContextBlobInput = { digest, content: { blocks }, records: [m1] };
  return { blob, manifest, exact };
}

function craftedEnvelope(runId: string, revision: number, messages: Message[], pkg = crafted()): AgentRunEnvelopeV3 {
  return v3TestEnvelope(runId, revision, {
    snapshot: { value: 'running', context: { step: 1, messages: messages as unknown as JsonValue } },
    context: { steps: [{ step: 0, phase: 'loop', blob: { digest: pkg.blob.digest }, manifest: pkg.manifest }], compiler: { version: 1, passes: 1, lastRetrieval: null, ratio: 1 } },
  });
}

interface Opened {
  store: AgentRunStoreV3;
  /** Another store object over the same data (a second process); the same object in memory. */
  reopen(): Promise<AgentRunStoreV3>;
}

function forgetCases(name: string, open: () => Promise<Opened>): void {
  describe(`forget on the ${name} V3 store`, () => {
    it('rewrites the history, the checkpoint and result.messages in place; revision and updatedAt stay', async () => {
      const { store, reopen } = await open();
      const result = await runAgent({
        checkpointVersion: 3, session: { store, runId: 'r1', scope: 's' }, prompt: 'What do I like?',
        tools: { look: { parameters: { type: 'object' }, execute: () => 'looked' } },
        model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'look', args: {} }] }, { text: 'You like stripes.' }] }),
        context: { sources: [memorySource([secretHit(), docHit()])] },
      });
      expect(result.status).toBe('completed');
      const before = (await store.load('r1'))!;
      expect(JSON.stringify(before)).toContain(SECRET);
      const digest = before.context!.steps[0]!.blob.digest;

      expect(await store.redactForgotten({ records: [m1] })).toBe(1);
      for (const reader of [store, await reopen()]) {
        const after = (await reader.load('r1'))!;
        expect(after.revision).toBe(before.revision);
        expect(after.updatedAt).toBe(before.updatedAt);
        expect(JSON.stringify(after)).not.toContain(SECRET);
        // The block at index 1 (after the prompt) is the stand-in, in the checkpoint's history and in the result.
        const expected = contentsOf(messagesOf(before));
        expected[1] = standIn(0, 0);
        expect(contentsOf(messagesOf(after))).toEqual(expected);
        expect(contentsOf(after.result!.messages)).toEqual(expected);
        expect(after.forgotten).toEqual({ digests: [digest] });
      }
      expect(await store.getBlob(digest)).toEqual({ status: 'redacted' });
      // The rewritten rows still check out: the run saves and loads again.
      const again = (await store.load('r1'))!;
      await store.save({ ...again, revision: again.revision + 1 });
      expect(contentsOf(messagesOf((await (await reopen()).load('r1'))!))[1]).toBe(standIn(0, 0));
    });

    it('replaces only the exact blocks the compiler appended: a user message under the marker and an overflow retry\'s block stay', async () => {
      const { store, reopen } = await open();
      const pkg = crafted();
      const ownMarker = '<cairn_context pass="0" step="0">\nplease keep this, it is mine';
      const overflow = '<cairn_context pass="0" step="0">\n[mem d-1] Deploys need CI.\n</cairn_context>';
      const assistant = `I will remember ${SECRET}.`;
      const messages: Message[] = [
        { role: 'user', content: 'hi' }, { role: 'user', content: pkg.exact }, { role: 'assistant', content: assistant },
        { role: 'user', content: ownMarker }, { role: 'user', content: overflow },
      ];
      await store.save(craftedEnvelope('r2', 1, messages, pkg), { blobs: [pkg.blob] });
      expect(await store.redactForgotten({ records: [m1] })).toBe(1);
      const after = (await (await reopen()).load('r2'))!;
      expect(contentsOf(messagesOf(after))).toEqual(['hi', standIn(0, 0), assistant, ownMarker, overflow]);
      expect(after.revision).toBe(1);
    });

    it('stores stand-ins at a later save: of a run still holding the block, and of a package that arrives redacted', async () => {
      const { store, reopen } = await open();
      const pkg = crafted();
      const held: Message[] = [{ role: 'user', content: 'hi' }, { role: 'user', content: pkg.exact }];
      await store.save(craftedEnvelope('r3', 1, held, pkg), { blobs: [pkg.blob] });
      expect(await store.redactForgotten({ records: [m1] })).toBe(1);
      // A leg that was running at forget time saves its history, the block still in it: the store keeps the stand-in.
      const more: Message[] = [...held, { role: 'assistant', content: 'ok' }];
      await store.save(craftedEnvelope('r3', 2, more, pkg));
      await (await reopen()).save(craftedEnvelope('r3', 3, [...more, { role: 'user', content: 'next' }], pkg));
      const later = (await store.load('r3'))!;
      expect(contentsOf(messagesOf(later))).toEqual(['hi', standIn(0, 0), 'ok', 'next']);
      expect(JSON.stringify(later)).not.toContain(SECRET);

      // A package holding a revision forgotten before it was stored arrives redacted, and so do its run's copies.
      expect(await store.redactForgotten({ records: [{ recordId: 'm-1', revision: 2 }] })).toBe(0);
      const blocks: JsonValue[] = [{ kind: 'retrieval', source: 'mem', records: [{ id: 'm-1', index: 0, text: `${SECRET} v2`, revision: 2 }] }];
      const late = { ...crafted(), blob: { digest: contextBlobDigest(blocks), content: { blocks }, records: [{ recordId: 'm-1', revision: 2 }] } };
      late.manifest.digest = late.blob.digest;
      late.manifest.blocks = [{ kind: 'retrieval', source: 'mem', records: 1, tokens: 5 }];
      const lateText = `<cairn_context pass="0" step="0">\n[mem m-1] ${SECRET} v2\n</cairn_context>`;
      await store.save(craftedEnvelope('r4', 1, [{ role: 'user', content: 'hi' }, { role: 'user', content: lateText }], late), { blobs: [late.blob] });
      expect(await store.getBlob(late.blob.digest)).toEqual({ status: 'redacted' });
      const stored = (await (await reopen()).load('r4'))!;
      expect(contentsOf(messagesOf(stored))).toEqual(['hi', standIn(0, 0)]);
      expect(stored.forgotten).toEqual({ digests: [late.blob.digest] });
    });

    it('a resume drops the stand-ins, compiles the step again (refresh redacted) and says cachePrefixChanged', async () => {
      const { store } = await open();
      const hits = [secretHit(), docHit()];
      const approve = { send: { parameters: { type: 'object' }, needsApproval: true, execute: () => 'sent' } };
      const base = { checkpointVersion: 3 as const, session: { store, runId: 'r5', scope: 's' }, tools: approve, context: { sources: [memorySource(hits)] } };
      const first = await runAgent({ ...base, prompt: 'send it', model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'send', args: {} }] }] }) });
      expect(first.status).toBe('suspended');
      const pending = first.status === 'suspended' ? first.pendingApprovals[0]! : null!;
      expect(await store.redactForgotten({ records: [m1] })).toBe(1);
      hits.shift(); // the memory no longer holds the forgotten record
      expect(contentsOf(messagesOf((await store.load('r5'))!))).toContain(standIn(0, 0));

      const model = createMockModel({ responses: [{ text: 'sent.' }] });
      const result = await resumeAgent({ ...base, model, approvalResponses: [{ approvalId: pending.approvalId, token: pending.token, approved: true }] });
      expect(result.status).toBe('completed');
      const sent = contentsOf(model.calls[0]!.messages);
      expect(sent.join('\n')).not.toContain(SECRET);
      expect(sent).not.toContain(standIn(0, 0));
      expect(sent.filter((c) => c.startsWith('<cairn_context'))).toEqual(['<cairn_context pass="1" step="1">\n[mem d-1] Deploys need CI.\n</cairn_context>']);
      const record = (await store.load('r5'))!;
      const resumed = record.context!.steps.find((s) => s.step === 1)!.manifest as unknown as ContextManifest;
      expect(resumed.refresh).toBe('redacted');
      expect(resumed.cachePrefixChanged).toBe(true);
      expect(JSON.stringify(record)).not.toContain(SECRET);
      expect(contentsOf(messagesOf(record))).not.toContain(standIn(0, 0));
    });

    it('refuses a bad event with a typed error and writes nothing; counts the packages it redacted now', async () => {
      const { store } = await open();
      const pkg = crafted();
      await store.save(craftedEnvelope('r6', 1, [{ role: 'user', content: pkg.exact }], pkg), { blobs: [pkg.blob] });
      const other = { ...crafted() };
      const blocks2: JsonValue[] = [{ kind: 'retrieval', source: 'mem', records: [{ id: 'm-1', index: 0, text: SECRET, revision: 1 }] }];
      other.blob = { digest: contextBlobDigest(blocks2), content: { blocks: blocks2 }, records: [m1] };
      await store.putBlob(other.blob);
      for (const bad of [null, {}, { records: 'm-1' }, { records: [{ recordId: 'm-1' }] }, { records: [{ recordId: '', revision: 1 }] }, { records: [m1, { recordId: 'm-2', revision: 1.5 }] }]) {
        await expect(store.redactForgotten(bad as never)).rejects.toMatchObject({ code: 'invalid_options' });
      }
      expect((await store.getBlob(pkg.blob.digest)).status).toBe('found');
      expect(contentsOf(messagesOf((await store.load('r6'))!))).toEqual([pkg.exact]);
      // Nothing of the refused events was kept: a package holding m-2 arrives as it is.
      const blocks3: JsonValue[] = [{ kind: 'retrieval', source: 'mem', records: [{ id: 'm-2', index: 0, text: 'other', revision: 1 }] }];
      await store.putBlob({ digest: contextBlobDigest(blocks3), content: { blocks: blocks3 }, records: [{ recordId: 'm-2', revision: 1 }] });
      expect((await store.getBlob(contextBlobDigest(blocks3))).status).toBe('found');

      expect(await store.redactForgotten({ records: [m1] })).toBe(2);
      expect(await store.redactForgotten({ records: [m1] })).toBe(0);
      expect(contentsOf(messagesOf((await store.load('r6'))!))).toEqual([standIn(0, 0)]);
    });
  });
}

forgetCases('in-memory', async () => {
  const store = createInMemoryAgentRunStoreV3();
  return { store, reopen: async () => store };
});

const dirs: string[] = [];
const opsStores: SqliteOpsStore[] = [];
afterAll(() => {
  for (const ops of opsStores) ops.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
forgetCases('SQLite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-forget-'));
  dirs.push(dir);
  const open = () => {
    const ops = createSqliteOpsStore({ path: join(dir, 'ops.sqlite') });
    opsStores.push(ops);
    return createSqliteAgentRunStoreV3(ops);
  };
  return { store: open(), reopen: async () => open() };
});

describePostgres('forget on PostgreSQL', (env) => {
  const opened: PostgresAgentRunStoreV3[] = [];
  afterAll(async () => {
    for (const store of opened) await store.close();
  });
  forgetCases('PostgreSQL', async () => {
    const schema = env.newSchema();
    const open = async () => {
      const store = createPostgresAgentRunStoreV3({ connectionString: env.url }, { schema });
      opened.push(store);
      await store.setup();
      return store;
    };
    return { store: await open(), reopen: open };
  });
});

describe('finding a block by its shape (a package whose blocks are gone)', () => {
  const { manifest, exact } = crafted();
  it('matches the marker, one line per record the manifest counts (a text may run on over lines) and the close', () => {
    const match = shapeMatcher(manifest, ['m-1']);
    expect(match(exact)).toBe(standIn(0, 0));
    expect(match(exact.replace(`${SECRET}\n`, `${SECRET}\nsecond line of it\n`))).toBe(standIn(0, 0));
  });
  it('leaves a block with fewer records, one without the forgotten id, a user text under the marker, another step\'s block', () => {
    const match = shapeMatcher(manifest, ['m-1']);
    expect(match('<cairn_context pass="0" step="0">\n[mem d-1] Deploys need CI.\n</cairn_context>')).toBeNull();
    expect(match('<cairn_context pass="0" step="0">\n[mem m-7] x\n[mem d-1] Deploys need CI.\n</cairn_context>')).toBeNull();
    expect(match('<cairn_context pass="0" step="0">\nmy own words\n</cairn_context>')).toBeNull();
    expect(match(exact.replace('step="0"', 'step="1"'))).toBeNull();
  });
  it('a resume drops only the redacted steps\' stand-ins and blocks', () => {
    const steps = [
      { step: 0, phase: 'loop' as const, blob: { digest: 'sha256:a' }, manifest, redacted: true },
      { step: 1, phase: 'loop' as const, blob: { digest: 'sha256:b' }, manifest: { ...manifest, step: 1, pass: 1 } },
    ];
    const kept = standIn(1, 1);
    const messages = [{ role: 'user', content: 'hi' }, { role: 'user', content: standIn(0, 0) }, { role: 'user', content: exact }, { role: 'user', content: kept }];
    expect(dropRedactedBlocks(messages, steps)).toEqual({ messages: [messages[0], messages[3]], dropped: 2 });
  });
});

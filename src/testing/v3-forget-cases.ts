/**
 * The forget cases of the AgentRunStoreV3 conformance suite (docs/forget.md):
 * `redactForgotten` redacts the packages that hold a forgotten revision and
 * rewrites, in place, every copy of their retrieval block a run keeps (the
 * checkpoint's history, a terminal run's `result.messages`) into a stand-in
 * that keeps the block's marker; the run keeps its revision and last-save
 * time; only the exact blocks the compiler appended are replaced; a later save
 * of such a run is stored the same way.
 */
import assert from 'node:assert/strict';
import type { JsonValue } from '../agent/json.js';
import { contextBlobDigest } from '../v3/store-blob.js';
import type { AgentRunEnvelopeV3 } from '../v3/envelope.js';
import type { AgentRunStoreV3, ContextBlobInput } from '../v3/store-types.js';
import type { CaseRegister } from './conformance/suite.js';

/** What a forget case needs of the suite's fixture. */
interface ForgetFixture {
  store: AgentRunStoreV3;
  reopen?(): Promise<AgentRunStoreV3>;
}

type Envelope = (runId: string, revision: number, extra?: Partial<AgentRunEnvelopeV3>) => AgentRunEnvelopeV3;

const FACT = 'Ada keeps her spare key under the blue pot.';
const forgottenRecord = { recordId: 'mem-1', revision: 4 };

/** A package of one retrieval block (one versioned record and one document), its manifest, and the block's exact text. */
function retrievalPackage(step = 0) {
  const blocks: JsonValue[] = [{
    kind: 'retrieval', source: 'memory',
    records: [{ id: 'mem-1', index: 0, text: FACT, revision: 4 }, { id: 'doc-7', index: 1, text: 'The office opens at nine.' }],
  }];
  const digest = contextBlobDigest(blocks);
  const manifest = {
    version: 1, step, phase: 'loop', refresh: 'initial', pass: 1, digest, messagesDigest: 'sha256:00',
    model: { provider: 'mock', modelId: 'm' }, tools: [],
    blocks: [{ kind: 'retrieval', source: 'memory', records: 2, tokens: 14 }],
    placement: { retrieval: 'appended', workingMemory: 'none', tailKept: false },
    tokens: { estimated: 30, window: null, package: 14 },
  };
  const marker = `<cairn_context pass="1" step="${step}">`;
  const exact = `${marker}\n[memory mem-1] ${FACT}\n[memory doc-7] The office opens at nine.\n</cairn_context>`;
  const blob: ContextBlobInput = { digest, content: { blocks }, records: [forgottenRecord] };
  return { blob, manifest, marker, exact };
}

const contents = (messages: unknown): string[] =>
  (messages as { content: unknown }[]).map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));

const historyOf = (record: AgentRunEnvelopeV3) => contents((record.snapshot as { context: { messages: unknown } }).context.messages);

function withPackage(envelope: Envelope, runId: string, revision: number, messages: JsonValue[], extra: Partial<AgentRunEnvelopeV3> = {}) {
  const pkg = retrievalPackage();
  return envelope(runId, revision, {
    snapshot: { value: 'running', context: { step: 1, messages } },
    context: { steps: [{ step: 0, phase: 'loop', blob: { digest: pkg.blob.digest }, manifest: pkg.manifest }] },
    ...extra,
  });
}

export function registerForgetCases(register: CaseRegister<ForgetFixture>, envelope: Envelope): void {
  register('redactForgotten rewrites each copy of the block in place, keeps revision and updatedAt, and counts what it redacted', async ({ store, reopen }) => {
    const pkg = retrievalPackage();
    const messages: JsonValue[] = [{ role: 'user', content: 'Where is the key?' }, { role: 'user', content: pkg.exact }, { role: 'assistant', content: 'Under a pot.' }];
    await store.save(withPackage(envelope, 'f-1', 1, messages), { blobs: [pkg.blob] });
    await store.save(withPackage(envelope, 'f-1', 2, messages, {
      status: 'completed',
      result: { status: 'completed', text: 'Under a pot.', messages } as unknown as AgentRunEnvelopeV3['result'],
    }));
    const before = (await store.load('f-1'))!;
    assert.equal(await store.redactForgotten({ records: [forgottenRecord] }), 1);
    assert.equal(await store.redactForgotten({ records: [forgottenRecord] }), 0, 'a package is redacted once');
    assert.deepEqual(await store.getBlob(pkg.blob.digest), { status: 'redacted' });
    const standIn = `${pkg.marker}\n[forgotten]\n</cairn_context>`;
    for (const reader of [store, ...(reopen ? [await reopen()] : [])]) {
      const after = (await reader.load('f-1'))!;
      assert.equal(after.revision, before.revision, 'the run keeps its revision');
      assert.equal(after.updatedAt, before.updatedAt, 'the run keeps its last-save time');
      assert.deepEqual(historyOf(after), ['Where is the key?', standIn, 'Under a pot.']);
      assert.deepEqual(contents((after.result as unknown as { messages: unknown }).messages), ['Where is the key?', standIn, 'Under a pot.']);
      assert.deepEqual(after.forgotten, { digests: [pkg.blob.digest] });
      assert.equal(after.context!.steps[0]!.redacted, true);
      assert.ok(!JSON.stringify(after).includes(FACT), 'the forgotten text is in no part of the loaded record');
    }
  });

  register('only the exact blocks are replaced: a user message opening with the marker and a block without the record stay', async ({ store, reopen }) => {
    const pkg = retrievalPackage();
    const own = `${pkg.marker}\nthis one is the user's own words`;
    const other = `${pkg.marker}\n[memory doc-7] The office opens at nine.\n</cairn_context>`;
    const messages: JsonValue[] = [{ role: 'user', content: pkg.exact }, { role: 'user', content: own }, { role: 'user', content: other }];
    await store.save(withPackage(envelope, 'f-2', 1, messages), { blobs: [pkg.blob] });
    assert.equal(await store.redactForgotten({ records: [forgottenRecord] }), 1);
    const after = (await (reopen ? await reopen() : store).load('f-2'))!;
    assert.deepEqual(historyOf(after), [`${pkg.marker}\n[forgotten]\n</cairn_context>`, own, other]);
    assert.equal(after.revision, 1);
  });

  register('a later save of a run still holding the block stores the stand-in, and the run saves on from there', async ({ store, reopen }) => {
    const pkg = retrievalPackage();
    const held: JsonValue[] = [{ role: 'user', content: 'hi' }, { role: 'user', content: pkg.exact }];
    await store.save(withPackage(envelope, 'f-3', 1, held), { blobs: [pkg.blob] });
    assert.equal(await store.redactForgotten({ records: [forgottenRecord] }), 1);
    // A leg that was running at forget time saves its in-memory history, the block still in it.
    await store.save(withPackage(envelope, 'f-3', 2, [...held, { role: 'assistant', content: 'ok' }]));
    const later = (await (reopen ? await reopen() : store).load('f-3'))!;
    assert.deepEqual(historyOf(later), ['hi', `${pkg.marker}\n[forgotten]\n</cairn_context>`, 'ok']);
    assert.equal(later.revision, 2);
    assert.ok(!JSON.stringify(later).includes(FACT));
  });

  register('a package holding a revision forgotten before it was stored arrives redacted', async ({ store }) => {
    assert.equal(await store.redactForgotten({ records: [forgottenRecord] }), 0, 'nothing held it yet');
    const pkg = retrievalPackage();
    assert.deepEqual(await store.putBlob(pkg.blob), { digest: pkg.blob.digest, stored: true });
    assert.deepEqual(await store.getBlob(pkg.blob.digest), { status: 'redacted' });
    const other = { ...forgottenRecord, revision: 5 };
    const blocks: JsonValue[] = [{ kind: 'retrieval', source: 'memory', records: [{ id: 'mem-1', index: 0, text: 'A newer text.', revision: 5 }] }];
    const newer: ContextBlobInput = { digest: contextBlobDigest(blocks), content: { blocks }, records: [other] };
    await store.putBlob(newer);
    assert.equal((await store.getBlob(newer.digest)).status, 'found', 'another revision of the record is not forgotten');
  });
}

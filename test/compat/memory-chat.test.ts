/**
 * The memory and chat records of the compatibility corpus
 * (corpus/memory-chat-v<N>/, written by generate-memory-chat.ts): runs with
 * memory and a chat as the engine stores them (envelope version 2), each put
 * back into a fresh store (in memory, and a SQLite file) with what the memory
 * and chat stores held, then resumed or reconciled by the current code. What
 * a user relies on is checked: an extraction left pending or planned is
 * settled by the spec's rules (run again, or confirmed without a memory LLM
 * call), never twice; a chat write that failed or was never recorded is
 * finished, every message once; a suspended run goes on, recalls nothing
 * again, extracts once and projects its whole transcript.
 *
 * The files are never edited (see corpus/README.md).
 */
import { describe, expect, it } from 'vitest';
import { reconcileAgentRun, resumeAgent, type AgentRunEnvelope } from 'cairn/agent';
import { createInMemoryChatStore, type ChatRecord } from 'cairn/chat';
import type { MemoryRecord } from 'cairn/memory';
import type { MockResponse } from 'cairn/testing';
import { createEffects, WRITTEN_AT } from './corpus-agent.js';
import { corpusFiles, corpusFolders, corpusStores, readCorpusFile, type StoreKind } from './corpus-stores.js';
import { CHAT_ID, MEMORY_SCOPE, memoryChatAgent, memoryStoreWith, type MemoryLog } from './memory-chat-agent.js';

const RESUMED_AT = WRITTEN_AT + 86_400_000;
const FACT = 'wants order 7 gift wrapped';
const DONE = 'Order 7 is packed and will be gift wrapped.';

interface Fixture {
  folder: string;
  name: string;
  envelope: AgentRunEnvelope;
  memory: MemoryRecord[];
  chat: ChatRecord | null;
}

const read = readCorpusFile;

function loadFixtures(): Fixture[] {
  const out: Fixture[] = [];
  for (const folder of corpusFolders(/^memory-chat-v\d+$/)) {
    for (const file of corpusFiles(folder, /^[a-z-]+\.json$/).filter((f) => !/\.(memory|chat)\.json$/.test(f))) {
      const name = file.slice(0, -'.json'.length);
      out.push({
        folder, name, envelope: read(folder, file) as AgentRunEnvelope,
        memory: read(folder, `${name}.memory.json`) as MemoryRecord[], chat: read(folder, `${name}.chat.json`) as ChatRecord | null,
      });
    }
  }
  return out;
}

const STORES = corpusStores('cairn-corpus-mc-');

/** The fixture's world, put back: its run store, memory store and chat store, and the agent of a process a day later. */
async function world(fixture: Fixture, kind: StoreKind, options: { memory?: MemoryRecord[]; responses?: MockResponse[] } = {}) {
  const store = await kind.open(fixture.envelope);
  const memory = await memoryStoreWith(options.memory ?? fixture.memory);
  const chats = createInMemoryChatStore();
  if (fixture.chat) await chats.saveChat(CHAT_ID, fixture.chat);
  const log: MemoryLog = { asked: [] };
  const effects = createEffects();
  const agent = memoryChatAgent({
    effects, runId: fixture.envelope.runId, store, responses: options.responses ?? [], memory, memoryLog: log, chats, now: RESUMED_AT, idPrefix: 'resume',
  });
  const reconcile = () => reconcileAgentRun({ session: agent.session, memory: agent.memory, chat: agent.chat, deps: { clock: { now: () => RESUMED_AT } } });
  return { store, memory, chats, log, effects, agent, reconcile, runId: fixture.envelope.runId };
}

/** The chat holds the run's whole transcript once, each message under `<runId>:<index>` (input messages included: none was in a chat before). */
async function expectWholeChat(w: Awaited<ReturnType<typeof world>>) {
  const stored = await w.store.load(w.runId);
  const messages = stored!.result!.messages;
  const record = await w.chats.loadChat(CHAT_ID);
  expect(record?.messages).toEqual(messages);
  expect(record?.messageIds).toEqual(messages.map((_, i) => `${w.runId}:${i}`));
  expect(stored?.chat).toMatchObject({ status: 'written', cursor: messages.length });
}

/** Memory holds the fact once, written by the run's extraction. */
async function expectFactOnce(w: Awaited<ReturnType<typeof world>>) {
  const stored = await w.store.load(w.runId);
  const operationId = stored!.memory!.extraction!.operationId;
  const records = (await w.memory.list({ scope: MEMORY_SCOPE })).filter((r) => r.text === FACT);
  expect(records).toHaveLength(1);
  expect(records[0]!.metadata.cairn).toEqual({ runId: w.runId, operationId });
  expect(stored!.memory!.extraction).toMatchObject({ status: 'completed', planned: 1, mutations: 1 });
}

const fixtures = loadFixtures();

describe('the compatibility corpus: runs with memory and a chat', () => {
  it('holds the cases of every version, each with its memory and chat', () => {
    expect(fixtures.length).toBeGreaterThan(0);
    for (const folder of new Set(fixtures.map((f) => f.folder))) {
      expect(fixtures.filter((f) => f.folder === folder).map((f) => f.name).sort(), folder)
        .toEqual(['chat-failed', 'completed', 'extraction-pending', 'extraction-planned', 'suspended-approval']);
    }
    for (const f of fixtures) {
      expect(f.envelope.version, f.name).toBe(2);
      expect(f.envelope.machine.version).toBe(Number(f.folder.slice('memory-chat-v'.length)));
      expect(f.envelope.memory?.scope).toEqual(MEMORY_SCOPE);
      expect(f.envelope.chat?.chatId).toBe(CHAT_ID);
    }
  });

  for (const fixture of fixtures) {
    describe(`${fixture.folder}/${fixture.name} (stored ${fixture.envelope.status}, extraction ${fixture.envelope.memory?.extraction?.status ?? 'none'}, chat ${fixture.envelope.chat?.status})`, () => {
      for (const kind of STORES) {
        if (fixture.name === 'completed') {
          it(`${kind.name}: a terminal resume answers its result and reconcileAgentRun reports it settled, writing nothing`, async () => {
            const w = await world(fixture, kind);
            const result = await resumeAgent(w.agent);
            expect(result.status === 'completed' && result.output).toBe(DONE);
            expect(await reconcileAgentRunAnswer(w)).toEqual({ runId: w.runId, memory: 'completed', chat: 'written' });
            expect(await w.store.load(w.runId)).toEqual(fixture.envelope);
            expect(w.log.asked).toEqual([]);
            w.agent.model.assertAllUsed();
            await expectFactOnce(w);
            await expectWholeChat(w);
          });
        }

        if (fixture.name === 'extraction-pending') {
          it(`${kind.name}: nothing was planned, so reconcileAgentRun runs the extraction now, and finishes the chat write`, async () => {
            const w = await world(fixture, kind);
            expect(await reconcileAgentRunAnswer(w)).toEqual({ runId: w.runId, memory: 'completed', chat: 'written' });
            expect(w.log.asked).toHaveLength(2);
            await expectFactOnce(w);
            await expectWholeChat(w);
            await expectSettledForGood(w);
          });
        }

        if (fixture.name === 'extraction-planned') {
          it(`${kind.name}: the planned write is in memory, so reconcileAgentRun completes it without a memory LLM call`, async () => {
            const w = await world(fixture, kind);
            expect(await reconcileAgentRunAnswer(w)).toEqual({ runId: w.runId, memory: 'completed', chat: 'written' });
            expect(w.log.asked).toEqual([]);
            await expectFactOnce(w);
            await expectSettledForGood(w);
          });
          it(`${kind.name}: with nothing of it in memory (the write never landed), reconcileAgentRun runs it now, once`, async () => {
            const w = await world(fixture, kind, { memory: [] });
            expect(await reconcileAgentRunAnswer(w)).toEqual({ runId: w.runId, memory: 'completed', chat: 'written' });
            expect(w.log.asked).toHaveLength(2);
            await expectFactOnce(w);
            await expectSettledForGood(w);
          });
        }

        if (fixture.name === 'chat-failed') {
          it(`${kind.name}: a terminal resume repairs the chat write that failed, without a model call`, async () => {
            const w = await world(fixture, kind);
            const result = await resumeAgent(w.agent);
            expect(result.status === 'completed' && result.output).toBe(DONE);
            await expectWholeChat(w);
            expect(await reconcileAgentRunAnswer(w)).toEqual({ runId: w.runId, memory: 'completed', chat: 'written' });
            await expectSettledForGood(w);
          });
          it(`${kind.name}: so does reconcileAgentRun({ session, chat })`, async () => {
            const w = await world(fixture, kind);
            expect(await reconcileAgentRun({ session: w.agent.session, chat: w.agent.chat })).toEqual({ runId: w.runId, memory: 'completed', chat: 'written' });
            await expectWholeChat(w);
          });
        }

        if (fixture.name === 'suspended-approval') {
          it(`${kind.name}: approved, the payment runs once, the run completes, extracts once and projects its whole transcript`, async () => {
            const w = await world(fixture, kind, { responses: [{ text: DONE }] });
            const approvalResponses = fixture.envelope.pendingApprovals.map(({ approvalId, token }) => ({ approvalId, token, approved: true }));
            const result = await resumeAgent({ ...w.agent, approvalResponses });
            expect(result.status === 'completed' && result.output).toBe(DONE);
            expect(w.effects.byTool).toEqual({ pay: 1, ship: 0, lookup: 0 });
            w.agent.model.assertAllUsed();
            // The recall the run made before its first call is in the transcript once: a resume never recalls again.
            const recalls = result.messages.filter((m) => m.role === 'system' && JSON.stringify(m).includes('memoryRecall'));
            expect(recalls).toHaveLength(1);
            // The chat the suspension wrote is continued: its messages keep their ids, the new ones follow.
            const record = await w.chats.loadChat(CHAT_ID);
            expect(record?.messages).toEqual(result.messages);
            expect(record?.messageIds.slice(0, fixture.chat!.messageIds.length)).toEqual(fixture.chat!.messageIds);
            expect(new Set(record?.messageIds).size).toBe(result.messages.length);
            await expectFactOnce(w);
            expect(await reconcileAgentRunAnswer(w)).toEqual({ runId: w.runId, memory: 'completed', chat: 'written' });
          });
        }

        it(`${kind.name}: the same record from a future machine version (99) is refused and nothing is written`, async () => {
          const future: AgentRunEnvelope = { ...structuredClone(fixture.envelope), machine: { ...fixture.envelope.machine, version: 99 } };
          const w = await world({ ...fixture, envelope: future }, kind);
          const result = await resumeAgent(w.agent);
          expect(result).toMatchObject({ status: 'failed', error: { code: 'checkpoint_version_unsupported' } });
          expect(await w.store.load(w.runId)).toEqual(future);
          expect(w.log.asked).toEqual([]);
        });
      }
    });
  }
});

/** reconcileAgentRun({ session, memory, chat }), as an operator calls it once no executor drives the run. */
function reconcileAgentRunAnswer(w: Awaited<ReturnType<typeof world>>) {
  return w.reconcile();
}

/** A second reconciliation settles nothing more: no memory LLM call, no write. */
async function expectSettledForGood(w: Awaited<ReturnType<typeof world>>) {
  const revision = (await w.store.load(w.runId))!.revision;
  const asked = w.log.asked.length;
  expect(await w.reconcile()).toEqual({ runId: w.runId, memory: 'completed', chat: 'written' });
  expect((await w.store.load(w.runId))!.revision).toBe(revision);
  expect(w.log.asked).toHaveLength(asked);
}

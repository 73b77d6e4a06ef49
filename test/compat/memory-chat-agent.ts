/**
 * The agent behind the memory and chat records of the compatibility corpus
 * (corpus/memory-chat-v<N>/): the corpus agent's tools and model, with
 * memory (scope `{ userId: 'ada' }`, a scripted memory LLM) and a chat
 * (`chat-ada`). generate-memory-chat.ts ran it to write the records;
 * memory-chat.test.ts resumes and reconciles them with the same definition,
 * so the binding (bindingId, memory scope, chat) is the one they were
 * written under. Never change what goes into the binding: add a case under a
 * new bindingId and a new folder instead.
 */
import type { ResumeOptions } from 'cairn/agent';
import type { ChatStore } from 'cairn/chat';
import { createInMemoryMemoryStore, type MemoryRecord, type MemoryStore } from 'cairn/memory';
import type { MockResponse } from 'cairn/testing';
import type { AgentMemoryOptions, MemoryLlmInput } from '../../src/memory/run-types.js';
import { corpusAgent, type Effects, WRITTEN_AT } from './corpus-agent.js';

export const MEMORY_CHAT_BINDING_ID = 'cairn-compat-memory-chat-1';
export const MEMORY_SCOPE = { userId: 'ada' };
export const CHAT_ID = 'chat-ada';

/** What the memory LLM was asked, so a test can say "settled without another memory LLM call". */
export interface MemoryLog {
  asked: MemoryLlmInput[];
}

/** The memory LLM: the customer's wish in the conversation is the one fact; it is always added. */
export function corpusMemory(store: MemoryStore, log: MemoryLog, idPrefix: string): AgentMemoryOptions {
  let ids = 0;
  return {
    seams: {
      store,
      llm: (input) => {
        log.asked.push(input);
        return input.system.includes('extract')
          ? '{"facts":["wants order 7 gift wrapped"]}'
          : '{"memory":[{"event":"ADD","text":"wants order 7 gift wrapped"}]}';
      },
      clock: { now: () => WRITTEN_AT, setTimeout: () => () => undefined },
      generateId: () => `${idPrefix}-memory-${++ids}`,
    },
    scope: MEMORY_SCOPE,
  };
}

/** A memory store holding `records` as they were stored (ids, texts, metadata and times kept). */
export async function memoryStoreWith(records: readonly MemoryRecord[]): Promise<MemoryStore> {
  const store = createInMemoryMemoryStore();
  for (const r of records) {
    await store.add({ id: r.id, scope: r.scope, text: r.text, metadata: r.metadata, at: r.createdAt });
    if (r.updatedAt !== r.createdAt) await store.update({ id: r.id, scope: r.scope, text: r.text, metadata: r.metadata, at: r.updatedAt });
  }
  return store;
}

export interface MemoryChatAgentOptions {
  effects: Effects;
  runId: string;
  store: NonNullable<ResumeOptions['session']>['store'];
  responses: MockResponse[];
  memory: MemoryStore;
  memoryLog: MemoryLog;
  chats: ChatStore;
  now?: number;
  idPrefix?: string;
}

export function memoryChatAgent(options: MemoryChatAgentOptions) {
  const prefix = options.idPrefix ?? 'corpus';
  const base = corpusAgent({
    effects: options.effects, runId: options.runId, store: options.store, responses: options.responses, idPrefix: prefix,
    ...(options.now !== undefined ? { now: options.now } : {}),
  });
  return {
    ...base,
    bindingId: MEMORY_CHAT_BINDING_ID,
    prompt: 'Take care of order 7. I would like it gift wrapped.',
    memory: corpusMemory(options.memory, options.memoryLog, prefix),
    chat: { store: options.chats, chatId: CHAT_ID, scope: MEMORY_SCOPE },
  };
}

/**
 * Writes the memory and chat records of the compatibility corpus: runs with
 * memory and a chat (envelope version 2), as the engine of one run-machine
 * version stores them, in <out>/memory-chat-v<N>/. Beside each record,
 * `<case>.memory.json` and `<case>.chat.json` hold what the memory store and
 * the chat store held when the record was frozen (those are other systems;
 * a test puts them back before it resumes the run).
 *
 * Run it once per machine version, from the engine commit of that version
 * (see generate-corpus.ts for the worktree steps), with this file,
 * memory-chat-agent.ts and corpus-agent.ts copied in:
 *
 *   npx tsx --conditions=source test/compat/generate-memory-chat.ts --out <this repo>/test/compat/corpus
 *
 * It refuses to write into a folder that exists: these files are never
 * regenerated or edited. Clock and ids are fixed, so two runs on one commit
 * write the same bytes.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInMemoryAgentRunStore, runAgent, type AgentResult, type AgentRunEnvelope, type AgentRunStore } from 'cairn/agent';
import { createInMemoryChatStore, type ChatStore } from 'cairn/chat';
import { createInMemoryMemoryStore } from 'cairn/memory';
import { createEffects } from './corpus-agent.js';
import { CHAT_ID, MEMORY_SCOPE, memoryChatAgent } from './memory-chat-agent.js';

const LOOKUP = { toolCalls: [{ toolName: 'lookup', args: { orderId: '7' } }] };
const PAY = { toolCalls: [{ toolName: 'pay', args: { orderId: '7', amountCents: 4200 } }] };
const DONE = { text: 'Order 7 is packed and will be gift wrapped.' };

/** A run store whose saves from the `failFrom`-th on are refused (nothing lands): what a crash there leaves. */
function refusingFrom(failFrom: number) {
  const inner = createInMemoryAgentRunStore();
  let saves = 0;
  const store: AgentRunStore = {
    load: (id, o) => inner.load(id, o),
    save: async (e, o) => {
      if (++saves >= failFrom) throw new Error('disk full');
      return inner.save(e, o);
    },
  };
  return { inner, store };
}

/** A chat store whose writes throw. */
function downChats(): ChatStore {
  const inner = createInMemoryChatStore();
  return { loadChat: (id) => inner.loadChat(id), saveChat: async () => { throw new Error('chat database unavailable'); } };
}

interface Written {
  store: AgentRunStore;
  memory: ReturnType<typeof createInMemoryMemoryStore>;
  chats: ChatStore;
}

interface Case {
  name: string;
  status: AgentRunEnvelope['status'];
  write(runId: string): Promise<Written>;
}

function expectStatus(result: AgentResult, status: AgentResult['status'], what: string): void {
  if (result.status !== status) throw new Error(`${what}: expected ${status}, got ${result.status} ${JSON.stringify(result.status === 'failed' ? result.error : '')}`);
}

async function run(runId: string, responses: object[], store: AgentRunStore, chats: ChatStore, status: AgentResult['status'], seeded = false): Promise<Written> {
  const memory = createInMemoryMemoryStore();
  if (seeded) await memory.add({ id: 'm-earlier', scope: MEMORY_SCOPE, text: 'order 7 is a gift', metadata: {}, at: 1 });
  const result = await runAgent(memoryChatAgent({
    effects: createEffects(), runId, store, responses: responses as never, memory, memoryLog: { asked: [] }, chats,
  }));
  expectStatus(result, status, runId);
  return { store, memory, chats };
}

const cases: Case[] = [
  {
    name: 'completed',
    status: 'completed',
    write: (runId) => run(runId, [LOOKUP, DONE], createInMemoryAgentRunStore(), createInMemoryChatStore(), 'completed'),
  },
  {
    // Saves 1-4: the start, the lookup's executing receipt, the step, the turn without calls; 5 is the terminal
    // commit (the extraction pending); the plan's save (6) is refused, so nothing was planned or written.
    name: 'extraction-pending',
    status: 'completed',
    async write(runId) {
      const { inner, store } = refusingFrom(6);
      const written = await run(runId, [LOOKUP, DONE], store, createInMemoryChatStore(), 'completed');
      return { ...written, store: inner };
    },
  },
  {
    // The plan's save (6) landed and the fact was written; the save of the outcome (7) is refused.
    name: 'extraction-planned',
    status: 'completed',
    async write(runId) {
      const { inner, store } = refusingFrom(7);
      const chats = createInMemoryChatStore();
      const written = await run(runId, [LOOKUP, DONE], store, chats, 'completed');
      return { ...written, store: inner };
    },
  },
  {
    name: 'chat-failed',
    status: 'completed',
    write: (runId) => run(runId, [LOOKUP, DONE], createInMemoryAgentRunStore(), downChats(), 'completed'),
  },
  {
    name: 'suspended-approval',
    status: 'suspended',
    write: (runId) => run(runId, [LOOKUP, PAY], createInMemoryAgentRunStore(), createInMemoryChatStore(), 'suspended', true),
  },
];

const outArg = process.argv.indexOf('--out');
if (outArg === -1 || !process.argv[outArg + 1]) throw new Error('usage: generate-memory-chat.ts --out <corpus folder>');
const out = resolve(process.argv[outArg + 1]!);
const files: Array<[string, unknown]> = [];
let version: number | undefined;
for (const c of cases) {
  const runId = `corpus-mc-${c.name}`;
  const written = await c.write(runId);
  const envelope = await written.store.load(runId);
  if (!envelope) throw new Error(`${c.name}: nothing stored`);
  if (envelope.status !== c.status) throw new Error(`${c.name}: stored ${envelope.status}, expected ${c.status}`);
  if (version !== undefined && envelope.machine.version !== version) throw new Error('the cases were written by different machine versions');
  version = envelope.machine.version;
  files.push([`${c.name}.json`, envelope]);
  files.push([`${c.name}.memory.json`, await written.memory.list({ scope: MEMORY_SCOPE })]);
  files.push([`${c.name}.chat.json`, (await written.chats.loadChat(CHAT_ID)) ?? null]);
  console.log(`${c.name}: ${envelope.status}, envelope ${envelope.version}, revision ${envelope.revision}, extraction ${envelope.memory?.extraction?.status}, chat ${envelope.chat?.status}`);
}
const folder = join(out, `memory-chat-v${version}`);
if (existsSync(folder)) throw new Error(`${folder} exists: the records of a machine version are written once`);
mkdirSync(folder, { recursive: true });
for (const [name, value] of files) writeFileSync(join(folder, name), `${JSON.stringify(value, null, 2)}\n`);
console.log(`wrote ${files.length} files to ${folder}`);

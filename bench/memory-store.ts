/**
 * The cost of the memory and chat stores on SQLite (docs/memory.md,
 * docs/chat.md): `ops.memories.add` of a new fact and of a duplicate, a search
 * by words and by embedding over a scope of 1,000 records, and
 * `ops.chats.writeChat` of a 20-message chat, each next to a raw insert of
 * the same row (a search next to a raw SELECT of the scope's rows) (the same columns, one autocommit statement) into a twin table
 * in the same file over a second connection with the same settings (WAL,
 * synchronous=FULL). Rounds alternate the store and the raw inserts, so the
 * machine's noise falls on both; the table gives medians and ratios.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { ChatRecord } from 'cairn/chat';
import type { MemoryEmbedding } from 'cairn/memory';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { checkAdd } from '../src/memory/records.js';
import { MEMORY_COLUMNS, rowValues } from '../src/memory/rows.js';

const ROUNDS = 7;
/** Calls a round times, per operation. */
const PER_ROUND = 200;
const SCOPE_RECORDS = 1_000;
const DIMS = 256;

export interface MemoryStoreFigures {
  /** µs per call, medians over the rounds. */
  addNew: number;
  addDuplicate: number;
  rawMemoryInsert: number;
  searchWords: number;
  searchEmbedding: number;
  /** A raw SELECT of the scope's 1,000 rows, nothing decoded: the floor under a search. */
  rawScan: number;
  writeChat: number;
  rawChatInsert: number;
  chatBytes: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function vector(seed: number): MemoryEmbedding {
  let x = seed * 2654435761 % 4294967296;
  const v: number[] = [];
  for (let i = 0; i < DIMS; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    v.push(x / 2147483648 - 0.5);
  }
  return { vector: v, model: 'bench-embedder' };
}

function chatOf(n: number): ChatRecord {
  const messages: ChatRecord['messages'] = [];
  for (let i = 0; i < 20; i++) {
    messages.push(i % 2 === 0
      ? { role: 'user', content: `Question ${i} about order ${n}: where is it, and when will it arrive?` }
      : { role: 'assistant', content: `Order ${n} left the warehouse on day ${i}; it should arrive within two days.`, reasoning: [{ type: 'reasoning', text: 'Look the order up, then answer plainly.' }] });
  }
  return { chatId: `chat-${n}`, scope: { userId: 'ada' }, messages, messageIds: messages.map((_, i) => `run-${n}:${i}`) };
}

async function timed(calls: number, body: (i: number) => unknown): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < calls; i++) await body(i);
  return ((performance.now() - started) * 1000) / calls;
}

export async function measureMemoryStore(): Promise<MemoryStoreFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-memory-'));
  const path = join(dir, 'ops.sqlite');
  const ops = createSqliteOpsStore({ path });
  const raw = new Database(path);
  try {
    raw.pragma('synchronous = FULL');
    raw.exec(`CREATE TABLE raw_memories AS SELECT * FROM cairn_memories WHERE 0; CREATE TABLE raw_chats (chat_id TEXT PRIMARY KEY, revision INTEGER NOT NULL, record TEXT)`);
    const rawMemory = raw.prepare(`INSERT INTO raw_memories (${MEMORY_COLUMNS.join(', ')}) VALUES (${MEMORY_COLUMNS.map(() => '?').join(', ')})`);
    const rawChat = raw.prepare('INSERT INTO raw_chats (chat_id, revision, record) VALUES (?, ?, ?)');
    const memories = ops.memories;
    const chats = ops.chats;
    // The scope searches read: 1,000 records with embeddings.
    for (let i = 0; i < SCOPE_RECORDS; i++) {
      await memories.add({ id: `s-${i}`, scope: { userId: 'searcher' }, text: `fact ${i}: prefers ${i % 7 === 0 ? 'tea' : 'coffee'} at ${i % 24} o'clock`, embedding: vector(i), at: i });
    }
    const times = { addNew: [] as number[], addDuplicate: [] as number[], rawMemoryInsert: [] as number[], searchWords: [] as number[],
      searchEmbedding: [] as number[], rawScan: [] as number[], writeChat: [] as number[], rawChatInsert: [] as number[] };
    let n = 0;
    for (let round = 0; round < ROUNDS + 1; round++) {
      const base = n;
      n += PER_ROUND;
      const input = (i: number) => ({ id: `m-${base + i}`, scope: { userId: 'ada', agentId: 'support' }, text: `fact number ${base + i} about Ada`, metadata: { cairn: { runId: 'run-1', operationId: `op-${round}` } }, embedding: vector(base + i), at: base + i });
      const addNew = await timed(PER_ROUND, (i) => memories.add(input(i)));
      const addDuplicate = await timed(PER_ROUND, (i) => memories.add({ ...input(i), id: `dup-${base + i}` }));
      const rawMemoryInsert = await timed(PER_ROUND, (i) => rawMemory.run(...rowValues(checkAdd(input(i)).record)));
      const searchWords = await timed(20, () => memories.search({ scope: { userId: 'searcher' }, query: 'does Ada prefer tea in the morning?' }));
      const searchEmbedding = await timed(20, (i) => memories.search({ scope: { userId: 'searcher' }, query: 'tea', embedding: vector(10_000 + i) }));
      const scan = raw.prepare('SELECT * FROM cairn_memories WHERE user_id = ? ORDER BY created_at, id');
      const rawScan = await timed(20, () => scan.all('searcher'));
      const writeChat = await timed(PER_ROUND, async (i) => {
        const record = chatOf(base + i);
        await chats.writeChat(record.chatId, record, { expectedRevision: 0 });
      });
      const rawChatInsert = await timed(PER_ROUND, (i) => rawChat.run(`chat-${base + i}`, 1, JSON.stringify(chatOf(base + i))));
      if (round === 0) continue; // warm-up
      Object.entries({ addNew, addDuplicate, rawMemoryInsert, searchWords, searchEmbedding, rawScan, writeChat, rawChatInsert })
        .forEach(([k, v]) => times[k as keyof typeof times].push(v));
    }
    return {
      addNew: median(times.addNew), addDuplicate: median(times.addDuplicate), rawMemoryInsert: median(times.rawMemoryInsert),
      searchWords: median(times.searchWords), searchEmbedding: median(times.searchEmbedding), rawScan: median(times.rawScan),
      writeChat: median(times.writeChat), rawChatInsert: median(times.rawChatInsert), chatBytes: JSON.stringify(chatOf(0)).length,
    };
  } finally {
    raw.close();
    ops.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function printMemoryStore(f: MemoryStoreFigures): void {
  const us = (x: number) => `${x.toFixed(0)} µs`;
  const ratio = (x: number, base: number) => `${(x / base).toFixed(2)}x`;
  console.log(`\nMemory and chat stores on SQLite (synchronous=FULL), median of ${ROUNDS} rounds; raw = one autocommit INSERT of the same row into a twin table in the same file, or a SELECT of the scope`);
  console.log('| operation | per call | ratio to its raw baseline |');
  console.log('| --- | ---: | ---: |');
  console.log(`| raw insert of a memory row | ${us(f.rawMemoryInsert)} | 1.00x |`);
  console.log(`| memories.add, a new fact (${DIMS}-d embedding) | ${us(f.addNew)} | ${ratio(f.addNew, f.rawMemoryInsert)} |`);
  console.log(`| memories.add, the same text again (dedup refresh) | ${us(f.addDuplicate)} | ${ratio(f.addDuplicate, f.rawMemoryInsert)} |`);
  console.log(`| raw SELECT of a scope's ${SCOPE_RECORDS} rows (nothing decoded) | ${us(f.rawScan)} | 1.00x |`);
  console.log(`| memories.search by words, ${SCOPE_RECORDS} records in scope | ${us(f.searchWords)} | ${ratio(f.searchWords, f.rawScan)} |`);
  console.log(`| memories.search by embedding, ${SCOPE_RECORDS} records in scope | ${us(f.searchEmbedding)} | ${ratio(f.searchEmbedding, f.rawScan)} |`);
  console.log(`| raw insert of a chat row (${f.chatBytes} B, 20 messages) | ${us(f.rawChatInsert)} | 1.00x |`);
  console.log(`| chats.writeChat of that chat at revision 0 | ${us(f.writeChat)} | ${ratio(f.writeChat, f.rawChatInsert)} |`);
}

/**
 * The memory stores against one another: random sequences of add, update,
 * delete and sweep over a few overlapping scopes and a handful of texts (so
 * dedup and folds happen often), applied to the in-memory store and to
 * `ops.memories` of a SQLite ops store; after every call both answer the
 * same, and at the end every scope lists the same records and searches rank
 * them the same. Besides, no scope ever holds two records of one hash.
 * fast-check prints the seed of a failure; FC_SEED replays it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createInMemoryMemoryStore, type MemoryEmbedding, type MemoryScope, type MemoryStore } from 'cairn/memory';
import { createSqliteOpsStore, type SqliteOpsStore } from 'cairn/ops/sqlite';

const seed = process.env.FC_SEED;
const params = { numRuns: 60, ...(seed !== undefined && seed !== '' ? { seed: Number(seed) } : {}) };

const SCOPES: MemoryScope[] = [
  { userId: 'ada' }, { userId: 'ada', agentId: 'support' }, { userId: 'ada', agentId: 'sales' }, { userId: 'bob' },
  { userId: 'ada', agentId: 'support', chatId: 'c1' }, { agentId: 'support' },
];
const TEXTS = ['prefers tea', ' prefers  tea', 'lives in Oslo', 'likes jazz', 'Prefers tea', 'tea and jazz'];

const scope = fc.constantFrom(...SCOPES);
const text = fc.constantFrom(...TEXTS);
const id = fc.constantFrom('m-0', 'm-1', 'm-2', 'm-3', 'm-4', 'm-5');
const embedding = fc.option(fc.record({ vector: fc.constantFrom([1, 0], [0, 1], [0.6, 0.8], [1, 0, 0]), model: fc.constantFrom(undefined, 'e1', 'e2') }), { nil: undefined });
const op = fc.oneof(
  fc.record({ kind: fc.constant('add' as const), id, scope, text, embedding, expiresAt: fc.option(fc.integer({ min: 0, max: 20 }), { nil: undefined }) }),
  fc.record({ kind: fc.constant('update' as const), id, scope, text, embedding }),
  fc.record({ kind: fc.constant('delete' as const), id, scope }),
  fc.record({ kind: fc.constant('sweep' as const), scope, now: fc.integer({ min: 0, max: 20 }) }),
);
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

const clean = <T extends object>(o: T): T => JSON.parse(JSON.stringify(o)) as T;

async function apply(store: MemoryStore, o: Op, at: number): Promise<unknown> {
  const emb = o.kind === 'add' || o.kind === 'update' ? (o.embedding ? clean(o.embedding) as unknown as MemoryEmbedding : undefined) : undefined;
  try {
    switch (o.kind) {
      case 'add':
        return await store.add({ id: o.id, scope: o.scope, text: o.text, at, ...(emb ? { embedding: emb } : {}), ...(o.expiresAt !== undefined ? { expiresAt: o.expiresAt } : {}) });
      case 'update':
        return await store.update({ id: o.id, scope: o.scope, text: o.text, at, ...(emb ? { embedding: emb } : {}) });
      case 'delete':
        return await store.delete({ id: o.id, scope: o.scope });
      case 'sweep':
        return await store.sweep({ scope: o.scope, now: o.now });
    }
  } catch (error) {
    return { error: (error as { code?: string }).code };
  }
}

const dir = mkdtempSync(join(tmpdir(), 'cairn-memory-model-'));
let files = 0;
const opened: SqliteOpsStore[] = [];
afterAll(() => {
  for (const ops of opened) ops.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the SQLite memory store and the in-memory one', () => {
  it('answer every sequence of writes the same, and never hold one text twice in a scope', async () => {
    await fc.assert(fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40 }), async (ops) => {
      const memory = createInMemoryMemoryStore();
      const sqlite = createSqliteOpsStore({ path: join(dir, `m-${files++}.sqlite`), synchronous: 'normal' });
      opened.push(sqlite);
      for (const [i, o] of ops.entries()) {
        expect(await apply(sqlite.memories, o, i), `call ${i} (${o.kind})`).toEqual(await apply(memory, o, i));
      }
      for (const s of SCOPES) {
        const listed = await memory.list({ scope: s });
        expect(await sqlite.memories.list({ scope: s })).toEqual(listed);
        const exact = listed.filter((r) => JSON.stringify(r.scope) === JSON.stringify(s));
        expect(new Set(exact.map((r) => r.hash)).size).toBe(exact.length);
        for (const query of [{ query: 'tea jazz' }, { query: 'x', embedding: { vector: [1, 0] } }, { query: 'x', embedding: { vector: [1, 0], model: 'e1' } }]) {
          expect(await sqlite.memories.search({ scope: s, ...query, now: 10 })).toEqual(await memory.search({ scope: s, ...query, now: 10 }));
        }
      }
      sqlite.close();
    }), params);
  });
});

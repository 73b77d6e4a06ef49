// A versioned memory store on SQLite: commits and their receipts, a replay, a refused commit, history, forget.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createSqliteVersionedMemoryStore } from 'cairn/memory/versioned/sqlite';

const ops = createSqliteOpsStore({ path: join(mkdtempSync(join(tmpdir(), 'cairn-memory-')), 'cairn.sqlite') });
const store = createSqliteVersionedMemoryStore(ops);
const scope = { userId: 'ada' };
// The caller's digest of what it asked for; a replay must bring the same one.
const requestDigest = `sha256:${'1'.repeat(64)}`;

const first = await store.commit({
  scope, operationId: 'op-1', requestDigest, at: 1_000,
  mutations: [
    { op: 'add', id: 'tea', text: 'Ada prefers tea.', origin: 'inferred', sources: [{ messageId: 'tea-1:0' }] },
    { op: 'add', id: 'jazz', text: 'Ada likes jazz.', origin: 'explicit' },
  ],
});
console.log(first.receipt.scopeRevision, first.receipt.records); // 1 [ { id: 'tea', revision: 1, op: 'add' }, { id: 'jazz', revision: 1, op: 'add' } ]

// The same operation again (say, after a crash before its caller heard back): answered from the receipt, nothing applied.
const again = await store.commit({ scope, operationId: 'op-1', requestDigest, at: 5_000, mutations: [] });
console.log(again.replayed, again.receipt.committedAt); // true 1000

await store.commit({ scope, operationId: 'op-2', requestDigest, at: 2_000, mutations: [{ op: 'revise', id: 'tea', text: 'Ada prefers green tea.' }] });

// A commit with one refused mutation writes nothing at all.
try {
  await store.commit({
    scope, operationId: 'op-3', requestDigest, at: 3_000,
    mutations: [{ op: 'retract', id: 'jazz' }, { op: 'revise', id: 'coffee', text: 'Ada drinks coffee.' }],
  });
} catch (error) {
  console.log((error as { code: string }).code, await store.scopeRevision({ scope }), (await store.get({ scope, id: 'jazz' }))?.status);
  // memory_record_not_found 2 active
}

const [hit] = await store.search({ scope, text: 'green tea' });
console.log(hit?.record.text, hit?.score); // Ada prefers green tea. 1

const event = await store.forget({ scope, id: 'tea', at: 4_000 });
console.log(event.records); // [ { recordId: 'tea', revision: 1 }, { recordId: 'tea', revision: 2 } ]
console.log((await store.history({ scope, id: 'tea' })).map((r) => [r.revision, r.text, r.status]));
// [ [ 1, null, 'forgotten' ], [ 2, null, 'forgotten' ] ]
console.log(await store.forgotten({ scope }), store.rowCounts());
ops.close();

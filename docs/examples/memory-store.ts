// The memory store on its own: dedup by content hash, scope narrowing, search, sweep, and a refused scope.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInMemoryMemoryStore, MemoryError, type MemoryStore } from 'cairn/memory';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';

async function tour(name: string, store: MemoryStore) {
  const at = 1_700_000_000_000;
  await store.add({ id: 'm-1', scope: { userId: 'ada', agentId: 'support' }, text: 'prefers tea', at });
  // The same text (whitespace aside) in the same scope is the same fact: no second record.
  const again = await store.add({ id: 'm-2', scope: { userId: 'ada', agentId: 'support' }, text: ' prefers  tea ', at: at + 1 });
  await store.add({ id: 'm-3', scope: { userId: 'ada', agentId: 'sales' }, text: 'wants the annual plan', at: at + 2, expiresAt: at + 60_000 });
  await store.add({ id: 'm-4', scope: { userId: 'bob' }, text: 'prefers coffee', at: at + 3 });

  const ada = await store.list({ scope: { userId: 'ada' } });
  const support = await store.list({ scope: { userId: 'ada', agentId: 'support' } });
  const { hits } = await store.search({ scope: { userId: 'ada' }, query: 'Does Ada prefer tea?' });
  const swept = await store.sweep({ scope: { userId: 'ada' }, now: at + 60_000 });
  console.log(name, again.deduplicated, again.record.id, ada.map((r) => r.id), support.map((r) => r.id), hits.map((h) => h.record.text), swept);

  try {
    await store.list({ scope: { userId: 'ada', tenant: 'acme' } as never });
  } catch (error) {
    console.log(name, error instanceof MemoryError, (error as MemoryError).code);
  }
}

await tour('in-memory', createInMemoryMemoryStore());

// The SQLite ops store keeps memories in the same file as its runs.
const dir = mkdtempSync(join(tmpdir(), 'cairn-memory-'));
const ops = createSqliteOpsStore({ path: join(dir, 'ops.sqlite') });
try {
  await tour('sqlite', ops.memories);
} finally {
  ops.close();
  rmSync(dir, { recursive: true, force: true });
}

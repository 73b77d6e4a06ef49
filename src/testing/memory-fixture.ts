/**
 * What the MemoryStore conformance cases share: the fixture a backend hands
 * each case, and the inputs and checks the cases are written with.
 */
import assert from 'node:assert/strict';
import type { MemoryAddInput, MemoryRecord, MemoryScope, MemoryStore } from '../memory/types.js';

/** What `create()` hands one memory case. */
export interface MemoryStoreFixture {
  /** A store holding no records. Every case gets its own (reset a shared database in `create`). */
  store: MemoryStore;
  /**
   * Another store object over the same records, as a second process opens it
   * (`ops.memories` of a second ops store on the same file or schema). When
   * given, the durability case reads through it and the race cases write
   * through several at once; close them in `destroy`.
   */
  reopen?(): Promise<MemoryStore>;
}

export interface MemoryStoreInitializer {
  /** Names the describe block: `MemoryStore conformance: <name>`. */
  name: string;
  /**
   * Whether the records outlive the store object (the ops stores' do, the
   * in-memory store's do not). When true, `create()` must give `reopen`, and
   * the durability case reads and writes through a second store object.
   * @default false
   */
  durable?: boolean;
  /** Makes the store for one case. Called once per case. */
  create(): Promise<MemoryStoreFixture>;
  /** Closes what `create` and `reopen` opened. Called after each case, passed or failed. */
  destroy?(fixture: MemoryStoreFixture): Promise<void>;
}

export type MemoryRegister = (name: string, body: (fixture: MemoryStoreFixture) => Promise<void>) => void;

/** The write time of the cases: ms on the caller's clock. */
export const AT = 1_700_000_000_000;
export const ADA: MemoryScope = { userId: 'ada' };
export const ADA_SUPPORT: MemoryScope = { userId: 'ada', agentId: 'support' };
export const ADA_SALES: MemoryScope = { userId: 'ada', agentId: 'sales' };
export const BOB: MemoryScope = { userId: 'bob' };

/** An add of `text` under `scope` with id `id`, at {@link AT}, unless told otherwise. */
export const fact = (id: string, text: string, scope: MemoryScope = ADA, over: Partial<MemoryAddInput> = {}): MemoryAddInput => ({
  id, text, scope, at: AT, ...over,
});

/** Ids of records, in the order given. */
export const ids = (records: readonly Pick<MemoryRecord, 'id'>[]) => records.map((r) => r.id);

/** Asserts that `call` rejects with a Cairn error of `code` (a MemoryError). */
export async function rejectsWith(call: () => Promise<unknown>, code: string, what: string): Promise<void> {
  await assert.rejects(call, (error: unknown) => {
    const e = error as { code?: unknown; name?: unknown };
    assert.equal(e.code, code, `${what}: code`);
    assert.equal(e.name, 'MemoryError', `${what}: name`);
    return true;
  }, what);
}

/** Every record the store holds under the scopes the cases use, oldest first. */
export async function everything(store: MemoryStore): Promise<MemoryRecord[]> {
  const all: MemoryRecord[] = [];
  for (const scope of [ADA, BOB, { userId: 'eve' }, { agentId: 'support' }, { chatId: 'chat-1' }] as MemoryScope[]) {
    for (const record of await store.list({ scope })) if (!all.some((r) => r.id === record.id)) all.push(record);
  }
  return all;
}

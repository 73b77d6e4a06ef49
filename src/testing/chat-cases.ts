/** Chat store conformance cases: revisions, tombstones, conditional bad input, races and durability. */
import assert from 'node:assert/strict';
import type { ChatRecord, ChatStore, ConditionalChatStore } from '../chat/types.js';
import { BAD_CHAT_IDS, badRecords, chat, refused, stored, type ChatRegister, type ConditionalRegister } from './chat-fixture.js';

export function registerConditionalCases(register: ConditionalRegister): void {
  register('readChat of a chat never written is absent at revision 0; a write at 0 creates it at 1', async (store) => {
    assert.deepEqual(await store.readChat('chat-1'), { state: 'absent', revision: 0 });
    const record = chat('chat-1');
    assert.deepEqual(await store.writeChat('chat-1', record, { expectedRevision: 0 }), { status: 'written', revision: 1 });
    assert.deepEqual(await store.readChat('chat-1'), { state: 'stored', record: stored(record, 1), revision: 1 });
    assert.deepEqual(await store.loadChat('chat-1'), stored(record, 1));
  });

  register('every write moves the revision up by one; a write at another revision is a conflict that changes nothing', async (store) => {
    const first = chat('chat-1');
    const second = chat('chat-1', { messages: first.messages.slice(0, 1), messageIds: ['in-0'] });
    await store.writeChat('chat-1', first, { expectedRevision: 0 });
    assert.deepEqual(await store.writeChat('chat-1', second, { expectedRevision: 0 }), { status: 'conflict', revision: 1 }, 'a create over a stored chat');
    assert.deepEqual(await store.writeChat('chat-1', second, { expectedRevision: 2 }), { status: 'conflict', revision: 1 }, 'a revision from the future');
    assert.deepEqual(await store.loadChat('chat-1'), stored(first, 1));
    assert.deepEqual(await store.writeChat('chat-1', second, { expectedRevision: 1 }), { status: 'written', revision: 2 });
    await store.saveChat('chat-1', first);
    assert.equal((await store.readChat('chat-1')).revision, 3, 'an unconditional save counts too');
    assert.deepEqual(await store.writeChat('chat-1', second, { expectedRevision: 2 }), { status: 'conflict', revision: 3 }, 'a write decided before the save');
    assert.deepEqual(await store.readChat('chat-1'), { state: 'stored', record: stored(first, 3), revision: 3 });
  });

  register('a deletion leaves a tombstone at its own revision: loadChat finds nothing, a create conflicts', async (store) => {
    await store.writeChat('chat-1', chat('chat-1'), { expectedRevision: 0 });
    assert.deepEqual(await store.writeChat('chat-1', { deleted: true }, { expectedRevision: 0 }), { status: 'conflict', revision: 1 });
    assert.deepEqual(await store.writeChat('chat-1', { deleted: true }, { expectedRevision: 1 }), { status: 'written', revision: 2 });
    assert.deepEqual(await store.readChat('chat-1'), { state: 'tombstone', revision: 2 });
    assert.equal(await store.loadChat('chat-1'), undefined);
    assert.deepEqual(await store.writeChat('chat-1', chat('chat-1'), { expectedRevision: 0 }), { status: 'conflict', revision: 2 },
      'a writer that saw no chat cannot recreate a deleted one');
    assert.equal(await store.deleteChat('chat-1'), false, 'a tombstone is not deleted again');
    assert.deepEqual(await store.readChat('chat-1'), { state: 'tombstone', revision: 2 });
    const revived = chat('chat-1', { messageIds: ['a', 'b', 'c', 'd'] });
    assert.deepEqual(await store.writeChat('chat-1', revived, { expectedRevision: 2 }), { status: 'written', revision: 3 }, 'a write at the tombstone\'s revision');
    assert.deepEqual(await store.loadChat('chat-1'), stored(revived, 3));
  });

  register('deleteChat deletes a stored chat (true) and leaves an absent one absent (false); saveChat over a tombstone stores again', async (store) => {
    assert.equal(await store.deleteChat('chat-1'), false);
    assert.deepEqual(await store.readChat('chat-1'), { state: 'absent', revision: 0 });
    await store.saveChat('chat-1', chat('chat-1'));
    assert.equal(await store.deleteChat('chat-1'), true);
    assert.deepEqual(await store.readChat('chat-1'), { state: 'tombstone', revision: 2 });
    await store.saveChat('chat-1', chat('chat-1'));
    assert.deepEqual(await store.readChat('chat-1'), { state: 'stored', record: stored(chat('chat-1'), 3), revision: 3 });
  });

  register('the revision on a record given to a write is ignored: the store counts revisions', async (store) => {
    const record: ChatRecord = { ...chat('chat-1'), revision: 41 };
    assert.deepEqual(await store.writeChat('chat-1', record, { expectedRevision: 0 }), { status: 'written', revision: 1 });
    assert.equal((await store.loadChat('chat-1'))?.revision, 1);
  });

  register('a record read from readChat is a copy', async (store) => {
    await store.writeChat('chat-1', chat('chat-1'), { expectedRevision: 0 });
    const read = await store.readChat('chat-1');
    assert.equal(read.state, 'stored');
    if (read.state === 'stored') {
      read.record.messages.pop();
      read.record.messageIds.pop();
    }
    assert.deepEqual(await store.loadChat('chat-1'), stored(chat('chat-1'), 1));
  });
}

export function registerConditionalBadInput(register: ConditionalRegister): void {
  register('readChat, writeChat and deleteChat refuse a bad chat id, a bad record or a bad revision, writing nothing', async (store) => {
    await store.writeChat('chat-1', chat('chat-1'), { expectedRevision: 0 });
    for (const [what, id] of BAD_CHAT_IDS) {
      await refused(() => store.readChat(id as string), `readChat with ${what}`);
      await refused(() => store.writeChat(id as string, chat('x'), { expectedRevision: 0 }), `writeChat with ${what}`);
      await refused(() => store.deleteChat(id as string), `deleteChat with ${what}`);
    }
    for (const [what, record] of badRecords()) {
      await refused(() => store.writeChat('chat-1', record as ChatRecord, { expectedRevision: 1 }), `writeChat with ${what}`);
    }
    for (const [what, options] of [['no options', undefined], ['no revision', {}], ['a negative revision', { expectedRevision: -1 }],
      ['a fractional revision', { expectedRevision: 1.5 }], ['a revision that is a string', { expectedRevision: '1' }]] as const) {
      await refused(() => store.writeChat('chat-1', chat('chat-1'), options as never), `writeChat with ${what}`);
    }
    assert.deepEqual(await store.readChat('chat-1'), { state: 'stored', record: stored(chat('chat-1'), 1), revision: 1 });
    assert.deepEqual(await store.readChat('chat-2'), { state: 'absent', revision: 0 });
  });
}

async function stores(first: ChatStore, reopen: (() => Promise<ChatStore>) | undefined, extra: number): Promise<ChatStore[]> {
  const all = [first];
  if (reopen) for (let i = 0; i < extra; i++) all.push(await reopen());
  return all;
}

export function registerRaceCases(
  register: ChatRegister, registerConditional: ConditionalRegister, options: { conditional: boolean; durable: boolean },
): void {
  if (options.conditional) {
    registerConditional('of 10 concurrent writeChat at the same revision exactly one is written, the others conflict', async (store, fixture) => {
      const all = (await stores(store, fixture.reopen, 4)) as ConditionalChatStore[];
      const race = async (expectedRevision: number) => {
        const records = Array.from({ length: 10 }, (_, i) => chat('chat-1', { metadata: { writer: i } }));
        const results = await Promise.all(records.map((r, i) => all[i % all.length]!.writeChat('chat-1', r, { expectedRevision })));
        const winners = results.flatMap((r, i) => (r.status === 'written' ? [i] : []));
        assert.equal(winners.length, 1, `one winner at revision ${expectedRevision}`);
        assert.ok(results.every((r) => r.revision === expectedRevision + 1), 'a loser reports the winner\'s revision');
        const read = await store.readChat('chat-1');
        assert.deepEqual(read, { state: 'stored', record: stored(records[winners[0]!]!, expectedRevision + 1), revision: expectedRevision + 1 });
      };
      await race(0);
      await race(1);
      const deletions = await Promise.all(all.map((s) => s.writeChat('chat-1', { deleted: true }, { expectedRevision: 2 })));
      assert.equal(deletions.filter((r) => r.status === 'written').length, 1, 'one of the concurrent deletions');
      assert.deepEqual(await store.readChat('chat-1'), { state: 'tombstone', revision: 3 });
    });
  }

  register('concurrent saves of the same chat leave one whole record, never a mix', async ({ store, reopen }) => {
    const all = await stores(store, reopen, 3);
    const records = Array.from({ length: 8 }, (_, i) => chat('chat-1', { messageIds: [`${i}-a`, `${i}-b`, `${i}-c`, `${i}-d`] }));
    await Promise.all(records.map((r, i) => all[i % all.length]!.saveChat('chat-1', r)));
    const got = (await store.loadChat('chat-1'))!;
    const writer = records.findIndex((r) => r.messageIds[0] === got.messageIds[0]);
    assert.ok(writer >= 0);
    assert.deepEqual(got.messageIds, records[writer]!.messageIds);
    if (options.conditional) assert.equal(got.revision, 8, 'each save counted once');
  });

  if (!options.durable) return;
  register('another store object on the same data reads what was written, at the same revision', async ({ store, reopen }) => {
    assert.ok(reopen, 'a durable initializer gives reopen()');
    await store.saveChat('chat-1', chat('chat-1'));
    const other = await reopen();
    assert.deepEqual(await other.loadChat('chat-1'), await store.loadChat('chat-1'));
    if (options.conditional) {
      const conditional = other as ConditionalChatStore;
      assert.deepEqual(await conditional.writeChat('chat-1', chat('chat-1', { metadata: { by: 'other' } }), { expectedRevision: 1 }), { status: 'written', revision: 2 });
      assert.deepEqual((await store.loadChat('chat-1'))?.metadata, { by: 'other' });
    }
  });
}

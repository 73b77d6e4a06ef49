/** The VersionedMemoryStore conformance suite on the in-memory store, and its options. */
import { describe, expect, it } from 'vitest';
import { createInMemoryVersionedMemoryStore } from 'cairn/memory/versioned';
import { defineVersionedMemoryStoreConformance } from 'cairn/testing';

defineVersionedMemoryStoreConformance({ name: 'in-memory', create: async () => ({ store: createInMemoryVersionedMemoryStore() }) }, { describe, it });

describe('createInMemoryVersionedMemoryStore', () => {
  it('refuses options that are not an object or a clock without now()', () => {
    expect(() => createInMemoryVersionedMemoryStore(null as never)).toThrow(expect.objectContaining({ code: 'invalid_options' }));
    expect(() => createInMemoryVersionedMemoryStore({ clock: {} as never })).toThrow(expect.objectContaining({ code: 'invalid_options' }));
  });
});

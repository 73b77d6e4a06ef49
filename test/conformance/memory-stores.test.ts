/**
 * The MemoryStore conformance suite against the three stores: the in-memory
 * one, and `ops.memories` of the SQLite and PostgreSQL ops stores (durable:
 * every reopen() is another ops store on the same file or schema, as a second
 * process opens it).
 */
import { createInMemoryMemoryStore } from 'cairn/memory';
import { defineMemoryStoreConformance } from 'cairn/testing';
import { defineStoreMatrix, opsBackends, reopening } from './store-matrix.js';

defineStoreMatrix({
  label: 'memory conformance',
  define: defineMemoryStoreConformance,
  inMemory: () => ({ store: createInMemoryMemoryStore() }),
  backends: opsBackends({ synchronous: 'normal' }),
  fixture: (opened) => reopening(opened, (ops) => ops.memories),
});

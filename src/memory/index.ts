/**
 * `cairn/memory`: what a run remembers across runs. The store contract, the
 * in-memory store, and the typed error; the SQLite and PostgreSQL stores are
 * `ops.memories` of `createSqliteOpsStore` (cairn/ops/sqlite) and
 * `createPostgresOpsStore` (cairn/ops/postgres). See docs/memory.md.
 */
export { createInMemoryMemoryStore } from './in-memory.js';
export { MemoryError, type MemoryErrorCode } from './errors.js';
export { memoryContentHash, normalizeMemoryText } from './records.js';
export { MEMORY_SCOPE_KEYS } from './scope.js';
export type {
  MemoryAddInput,
  MemoryCairnMetadata,
  MemoryEmbedding,
  MemoryListInput,
  MemoryMetadata,
  MemoryRecord,
  MemoryScope,
  MemorySearchHit,
  MemorySearchInput,
  MemorySearchResult,
  MemoryStore,
  MemoryUpdateInput,
  MemoryWriteResult,
} from './types.js';

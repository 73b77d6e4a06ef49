/**
 * `cairn/memory/versioned`: records revisioned per scope, written by atomic
 * commits that leave a receipt under an operation id, and forget. The
 * contract, the in-memory store and the session; the SQLite and PostgreSQL
 * stores are `cairn/memory/versioned/sqlite` and `cairn/memory/versioned/postgres`
 * (so this entry loads no database driver). See docs/versioned-memory.md.
 */
export { createInMemoryVersionedMemoryStore, type InMemoryVersionedMemoryStoreOptions } from './in-memory.js';
export { MemoryError, type MemoryErrorCode } from '../errors.js';
export { MEMORY_TOOLS, MEMORY_WRITE_TOOLS } from './types.js';
export type {
  MemoryExtractionMessage,
  MemoryExtractionRequest,
  MemoryLlm,
  MemoryLlmAnswer,
  MemoryScope,
  MemorySession,
  MemorySessionOptions,
  MemorySourceResolution,
  MemoryToolCallIdentity,
  VersionedMemoryCommitInput,
  VersionedMemoryCommitResult,
  VersionedMemoryForgetEvent,
  VersionedMemoryMutation,
  VersionedMemoryReceipt,
  VersionedMemoryRecord,
  VersionedMemorySearchHit,
  VersionedMemorySource,
  VersionedMemoryStore,
} from './types.js';

// The session (createMemorySession and what it adds) is exported below this line.
export { createMemorySession, MemoryForgetListenerError, parseRunMessageId } from './session.js';
export { EXTRACTION_PROMPT } from './session-extract.js';
export type { MemoryToolWriteAnswer } from './session-tools.js';
export type { VersionedContextSourceOptions } from './context-source.js';

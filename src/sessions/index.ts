/**
 * `cairn/sessions`: a user's conversation with an app, kept across turns for
 * a Runner (the root `cairn` entry re-exports these). The contract, the
 * in-memory, file, SQLite and PostgreSQL services, the append-with-retry
 * call, and the typed errors. See docs/sessions.md.
 */
export { createInMemorySessionService } from './in-memory.js';
export { createFileSessionService } from './file.js';
export type { FileSessionServiceOptions } from './file.js';
export { appendSessionTurn } from './append.js';
export type { AppendSessionTurnOptions } from './append.js';
export { SessionConflictError, SessionCorruptError, SessionForeignError, SessionIdError, SessionTurnError } from './errors.js';
export type {
  AppendTurnOptions,
  AppendTurnResult,
  Session,
  SessionKey,
  SessionMessage,
  SessionService,
  SessionServiceOptions,
  SessionSummary,
  SessionTurn,
  SessionTurnInput,
} from './types.js';

/**
 * `createSqliteOpsStore`: runs, leases and circuit breakers in one SQLite
 * file, for one machine (several processes may share the file). See
 * docs/stores.md.
 */
import type Database from 'better-sqlite3';
import type { LeaseProvider } from '../../agent/types.js';
import { CairnTypeError, InvalidOptionsError } from '../../errors/index.js';
import type { BreakerStore } from '../../models/breaker-store.js';
import { createAgentRunStore, type SqliteAgentRunStore } from './agent-runs.js';
import { createBreakerStore } from './breakers.js';
import type { AgentStreamJournal } from '../../ui/journal.js';
import { journalRetention } from '../journal-kit.js';
import { createSqliteJournal, EMPTY_READ_ONLY_JOURNAL } from './journal.js';
import type { BudgetStore } from '../budgets-kit.js';
import { createSqliteBudgets } from './budgets.js';
import type { MemoryStore } from '../../memory/types.js';
import { createSqliteMemoryStore } from '../../memory/sqlite.js';
import type { ConditionalChatStore } from '../../chat/types.js';
import { createSqliteChatStore } from '../../chat/sqlite.js';
import { createLeaseProvider } from './leases.js';
import { checkCairnSchema, hasTable, openReadOnlyDatabase, refuseNonFile } from './read-only.js';
import { openDatabase } from './schema.js';

export { MIGRATIONS, SCHEMA_VERSION, StoreSchemaVersionError } from './schema.js';
export { NotACairnStoreError } from './read-only.js';
export type { SqliteAgentRunStore } from './agent-runs.js';
export type { BudgetStore } from '../budgets-kit.js';

export interface SqliteOpsStoreOptions {
  /** The database file; created, with its schema, when missing (unless `create` is false or `readonly` is set). */
  path: string;
  /**
   * `false`: the file must exist and already hold a Cairn store (its schema is
   * brought up to date as usual). A missing, empty or non-SQLite file, or a
   * SQLite file without Cairn's tables, is refused with NotACairnStoreError
   * before anything is written to it.
   * @default true
   */
  create?: boolean;
  /**
   * Opens an existing Cairn store for reading only: no schema, no WAL switch,
   * nothing written to the file or created beside it, and every write rejects.
   * The checks of `create: false` apply. A store with no `-wal` file (its last
   * writer closed) is read from an in-memory copy taken at open; a store with
   * one (a writer is using it, or one crashed) is read in place, through it.
   * @default false
   */
  readonly?: boolean;
  /**
   * How hard a commit waits for the disk. `'full'`: a save resolves only once
   * its commit is on disk. `'normal'`: in WAL mode, commits reach the disk at
   * checkpoints; a power loss or OS crash can lose the last commits (the file
   * is never corrupted), and a lost `executing` receipt lets a resume run an
   * effect again. A process crash loses nothing either way.
   * @default 'full'
   */
  synchronous?: 'full' | 'normal';
  /** The clock of lease expiry, of the lease check in save, and of a breaker row's `updated_at`. @default Date.now */
  clock?: { now(): number };
  /** How long a statement waits for another connection's lock before failing with SQLITE_BUSY. @default 5000 */
  busyTimeoutMs?: number;
  /**
   * How long `journal` keeps a stream after its last frame. Appends sweep
   * older streams away (at most once a minute per store object), so a stream
   * goes between this and a minute more after its last frame; `journal.prune`
   * deletes on demand. Keep it above the longest a client may take to
   * reconnect and replay.
   * @default 86_400_000 (one day)
   */
  journalRetentionMs?: number;
}

export interface SqliteOpsStore {
  /** The runs: pass as `session.store`. */
  agentRuns: SqliteAgentRunStore;
  /** Leases kept in the same file: pass as `lease.provider`, so a save checks the lease in its own transaction. */
  leases: LeaseProvider;
  /**
   * The model-call circuit breakers, one row per `provider:modelId` in the
   * same file: pass as `deps.breakerStore` of a headless run, so every
   * process on the file shares them. `cooldownUntil` is kept as given: a time
   * on the run's clock, not on `clock`.
   */
  breakers: BreakerStore;
  /**
   * The UI replay journal in the same file (`cairn_journal_streams`,
   * `cairn_journal_frames`): pass as `store` of `toAgentStreamResponse` and
   * `resumeAgentStreamResponse`. `updatedAt` is on `clock`; streams are kept
   * for `journalRetentionMs`. Read-only stores read it and refuse writes.
   */
  journal: AgentStreamJournal;
  /**
   * Named budget ledgers in the same file (`cairn_budget_entries`): pass
   * `budgets.ledger(name)` as `ledger` of createExecutionContext, so runs in
   * every process on the file spend from one ledger. An admission is one
   * IMMEDIATE transaction, so concurrent runs never admit past a ceiling.
   * Read-only stores read entries and refuse writes.
   */
  budgets: BudgetStore;
  /**
   * The memory store in the same file (`cairn_memories`): pass as
   * `memory.seams.store`. Each write is one IMMEDIATE transaction, so every
   * process on the file dedups by content hash together. Read-only stores
   * read records and refuse writes. See docs/memory.md.
   */
  memories: MemoryStore;
  /**
   * The conditional chat store in the same file (`cairn_chats`): pass as
   * `chat.store`. Each write compares and moves the chat's revision in one
   * statement. Read-only stores read chats and refuse writes. See docs/chat.md.
   */
  chats: ConditionalChatStore;
  /**
   * Writes a consistent copy of the database to `destination` (`VACUUM INTO`)
   * while the store stays in use. The file must not exist yet.
   */
  backup(destination: string): Promise<void>;
  /** Closes the connection. Calls made after it reject. Idempotent. */
  close(): void;
}

/**
 * Opens (or creates) the ops database at `path` and returns its stores.
 *
 * @example
 * ```ts
 * const ops = createSqliteOpsStore({ path: './runs.sqlite' });
 * const result = await runAgent({ model, prompt, session: { store: ops.agentRuns, runId: 'r-1', scope: 'tenant-a' } });
 * ops.close();
 * ```
 */
export function createSqliteOpsStore(options: SqliteOpsStoreOptions): SqliteOpsStore {
  const normalized = normalize(options);
  const journalRetentionMs = journalRetention(options.journalRetentionMs, 'createSqliteOpsStore');
  const { path } = normalized;
  let db: Database.Database;
  if (normalized.readonly) {
    db = openReadOnlyDatabase(path, normalized.busyTimeoutMs);
  } else if (!normalized.create) {
    refuseNonFile(path);
    db = openDatabase({ ...normalized, check: (fresh) => void checkCairnSchema(fresh, path) });
  } else {
    db = openDatabase(normalized);
  }
  const clock = options.clock ?? { now: () => Date.now() };
  const store: SqliteOpsStore = {
    agentRuns: createAgentRunStore(db, clock),
    leases: createLeaseProvider(db, clock),
    // A store read-only at schema 1 has no breaker table (migration 2 adds it): it has no breaker state either.
    breakers: normalized.readonly && !hasTable(db, 'cairn_breakers') ? NO_BREAKERS : createBreakerStore(db, clock),
    // Likewise a read-only store older than the journal's migration has no journal tables, and no streams.
    journal: normalized.readonly && !hasTable(db, 'cairn_journal_streams')
      ? EMPTY_READ_ONLY_JOURNAL
      : createSqliteJournal(db, { clock, retentionMs: journalRetentionMs, readonly: normalized.readonly }),
    budgets: createSqliteBudgets(db, { readonly: normalized.readonly, missing: normalized.readonly && !hasTable(db, 'cairn_budget_entries') }),
    memories: createSqliteMemoryStore(db, { readonly: normalized.readonly, missing: normalized.readonly && !hasTable(db, 'cairn_memories') }),
    chats: createSqliteChatStore(db, { readonly: normalized.readonly, missing: normalized.readonly && !hasTable(db, 'cairn_chats') }),
    async backup(destination: string) {
      if (typeof destination !== 'string' || destination === '') {
        throw new InvalidOptionsError('backup: destination must be a file path.');
      }
      db.prepare('VACUUM INTO ?').run(destination);
    },
    close() {
      if (db.open) db.close();
    },
  };
  connections.set(store, db);
  return store;
}

const connections = new WeakMap<object, Database.Database>();

/**
 * The connection under a store this module opened, for the CLI's own table in
 * the same file (not part of the public entry).
 * @internal Takes or gives a better-sqlite3 handle, whose types stay out of the published declarations (a user need not install @types/better-sqlite3).
 */
export function connectionOf(store: SqliteOpsStore): Database.Database {
  const db = connections.get(store);
  if (!db) throw new CairnTypeError('invalid_options', 'connectionOf: not a store of createSqliteOpsStore.');
  return db;
}

const NO_BREAKERS: BreakerStore = {
  async get() {
    return undefined;
  },
  async set() {
    throw new CairnTypeError('invalid_options', 'The ops store was opened read-only: it cannot record breaker state.');
  },
};

interface Normalized {
  path: string;
  synchronous: 'full' | 'normal';
  busyTimeoutMs: number;
  create: boolean;
  readonly: boolean;
}

function normalize(options: SqliteOpsStoreOptions): Normalized {
  if (typeof options !== 'object' || options === null || typeof options.path !== 'string' || options.path === '') {
    throw new InvalidOptionsError('createSqliteOpsStore: path must be a file path.');
  }
  const synchronous = options.synchronous ?? 'full';
  if (synchronous !== 'full' && synchronous !== 'normal') {
    throw new InvalidOptionsError(`createSqliteOpsStore: synchronous must be 'full' or 'normal', got ${String(synchronous)}.`);
  }
  const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
  if (typeof busyTimeoutMs !== 'number' || !Number.isFinite(busyTimeoutMs) || busyTimeoutMs < 0) {
    throw new InvalidOptionsError('createSqliteOpsStore: busyTimeoutMs must be a number of milliseconds >= 0.');
  }
  if (options.clock !== undefined && typeof options.clock?.now !== 'function') {
    throw new InvalidOptionsError('createSqliteOpsStore: clock must have a now() method.');
  }
  for (const name of ['create', 'readonly'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'boolean') {
      throw new InvalidOptionsError(`createSqliteOpsStore: ${name} must be a boolean.`);
    }
  }
  return {
    path: options.path, synchronous, busyTimeoutMs, create: options.create ?? true, readonly: options.readonly ?? false,
  };
}

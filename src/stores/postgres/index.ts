/**
 * `cairn/ops/postgres`: the run store, the lease provider and the circuit
 * breakers over one PostgreSQL schema. Call `setup()` once per deployment (or
 * at every start: it is idempotent and safe to run concurrently) before using
 * the store.
 */
import type { LeaseProvider } from '../../agent/types.js';
import type { BreakerStore } from '../../models/breaker-store.js';
import { createPostgresBreakerStore } from './breakers.js';
import type { AgentStreamJournal } from '../../ui/journal.js';
import { journalRetention } from '../journal-kit.js';
import { createPostgresJournal } from './journal.js';
import type { BudgetStore } from '../budgets-kit.js';
import { createPostgresBudgets } from './budgets.js';
import { migrate, opsTables } from './migrations.js';
import { createPostgresLeaseProvider } from './leases.js';
import { createPostgresAgentRunStore, type PostgresAgentRunStore } from './run-store.js';
import { Db, quoteSchema, type PostgresConnection } from './sql.js';
import type { MemoryStore } from '../../memory/types.js';
import { createPostgresMemoryStore } from '../../memory/postgres.js';
import type { ConditionalChatStore } from '../../chat/types.js';
import { createPostgresChatStore } from '../../chat/postgres.js';

export interface PostgresOpsStoreOptions {
  /** The schema that holds the ops tables; setup() creates it when missing. @default 'public' */
  schema?: string;
  /**
   * How long `journal` keeps a stream after its last frame, judged on the
   * database clock. Appends sweep older streams away (at most once a minute
   * per store object), so a stream goes between this and a minute more after
   * its last frame; `journal.prune` deletes on demand. Keep it above the
   * longest a client may take to reconnect and replay.
   * @default 86_400_000 (one day)
   */
  journalRetentionMs?: number;
}

export interface PostgresOpsStore {
  /** Creates the schema and tables, or migrates them to this code's version. Idempotent; concurrent calls are safe. */
  setup(): Promise<void>;
  /** The AgentRunStore: pass it as `session.store`. */
  agentRuns: PostgresAgentRunStore;
  /** The LeaseProvider on the database clock: pass it as `lease.provider`. */
  leases: LeaseProvider;
  /**
   * The model-call circuit breakers, one row per `provider:modelId`: pass as
   * `deps.breakerStore` of a headless run, so workers on every machine share
   * them. `cooldownUntil` is kept as given: a time on the run's clock, not on
   * the database's.
   */
  breakers: BreakerStore;
  /**
   * The UI replay journal in the same schema (`cairn_journal_streams`,
   * `cairn_journal_frames`): pass as `store` of `toAgentStreamResponse` and
   * `resumeAgentStreamResponse`. `updatedAt` is in ms on the database clock;
   * streams are kept for `journalRetentionMs`.
   */
  journal: AgentStreamJournal;
  /**
   * Named budget ledgers in the same schema (`cairn_budget_ledgers`,
   * `cairn_budget_entries`): pass `budgets.ledger(name)` as `ledger` of
   * createExecutionContext, so runs on every worker spend from one ledger.
   * Each write locks the ledger's row, so concurrent admissions never pass a
   * ceiling; a serialization conflict that outlasts a few tries is the
   * transient `budget_admission_conflict`.
   */
  budgets: BudgetStore;
  /**
   * The memory store in the same schema (`cairn_memories`): pass as
   * `memory.seams.store`. A write locks the record's scope, so workers on
   * every machine dedup by content hash together. See docs/memory.md.
   */
  memories: MemoryStore;
  /**
   * The conditional chat store in the same schema (`cairn_chats`): pass as
   * `chat.store`. Each write compares and moves the chat's revision in one
   * statement. See docs/chat.md.
   */
  chats: ConditionalChatStore;
  /** The schema this store uses. */
  readonly schema: string;
  /** Ends the pool if the store created it (from a connection string); a pool you passed stays open. */
  close(): Promise<void>;
}

/**
 * Opens the PostgreSQL ops store.
 *
 * @example
 * const ops = createPostgresOpsStore({ connectionString: process.env.DATABASE_URL! });
 * await ops.setup();
 * await runAgent({ model, prompt, session: { store: ops.agentRuns, runId, scope } });
 * await ops.close();
 */
export function createPostgresOpsStore(connection: PostgresConnection, options: PostgresOpsStoreOptions = {}): PostgresOpsStore {
  const schema = options.schema ?? 'public';
  const tables = opsTables(quoteSchema(schema));
  const journalRetentionMs = journalRetention(options.journalRetentionMs, 'createPostgresOpsStore');
  const db = Db.open(connection, schema);
  return {
    schema,
    setup: () => migrate(db, tables),
    agentRuns: createPostgresAgentRunStore(db, tables),
    leases: createPostgresLeaseProvider(db, tables),
    breakers: createPostgresBreakerStore(db, tables),
    journal: createPostgresJournal(db, tables, journalRetentionMs),
    budgets: createPostgresBudgets(db, tables),
    memories: createPostgresMemoryStore(db),
    chats: createPostgresChatStore(db),
    close: () => db.close(),
  };
}

export type { PostgresConnection } from './sql.js';
export type { PostgresAgentRunStore } from './run-store.js';
export type { BudgetStore } from '../budgets-kit.js';
export { StoreSchemaVersionError } from './errors.js';
export { MIGRATIONS, SCHEMA_VERSION } from './migrations.js';

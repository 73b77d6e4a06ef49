/**
 * `cairn/ops/redis`: the run store, the lease provider, the circuit breakers,
 * the UI replay journal and the budget ledgers over one Redis server (a
 * standalone server or a primary; not Redis Cluster), under one key prefix.
 * The store connects on first use, or when you call `connect()`.
 */
import type { LeaseProvider } from '../../agent/types.js';
import { InvalidOptionsError, UnsupportedStoreError } from '../../errors/index.js';
import type { BreakerStore } from '../../models/breaker-store.js';
import type { AgentStreamJournal } from '../../ui/journal.js';
import type { BudgetStore } from '../budgets-kit.js';
import { journalRetention } from '../journal-kit.js';
import { createRedisBreakerStore } from './breakers.js';
import { createRedisBudgets } from './budgets.js';
import { RedisConn } from './client.js';
import { createRedisJournal } from './journal.js';
import { checkPrefix, keys } from './keys.js';
import { createRedisLeaseProvider } from './leases.js';
import { createRedisAgentRunStore, type RedisAgentRunStore } from './run-store.js';

export interface RedisOpsStoreOptions {
  /** The server: `redis://[user:password@]host:port[/db]`, or `rediss://` for TLS. */
  url: string;
  /**
   * Every key the store writes starts with this, so several deployments (or
   * test cases) share one server without seeing each other's data.
   * @default 'cairn:'
   */
  keyPrefix?: string;
  /**
   * How long the store waits for the server: to connect (trying again while
   * it is refused), to get a lost connection back, or while a restarted
   * server loads its data. Past it, a call rejects with
   * StoreUnreachableError (`store_unreachable`) and nothing was written.
   * @default 5000
   */
  connectTimeoutMs?: number;
  /**
   * How long one command may wait for its answer. Past it, the call rejects
   * with PersistenceError: the command may or may not have run (a save's
   * revision fence makes that safe to find out by loading). Keep it above
   * the slowest save you expect. @default 10000
   */
  commandTimeoutMs?: number;
  /**
   * How long the journal keeps a stream after its last frame, judged on the
   * server's clock; appends sweep older streams away (at most once a minute
   * per store object), `journal.prune` deletes on demand.
   * @default 86_400_000 (one day)
   */
  journalRetentionMs?: number;
  /**
   * When above 0, a lease's hash is deleted by Redis (PEXPIREAT) this long
   * after the lease expires or is released, so keys no run takes again do
   * not pile up. Its fencing token then starts over at 1 for that key: keep
   * this far above the longest any executor may stall. 0 keeps every lease
   * hash. @default 0
   */
  leaseRetentionMs?: number;
  /**
   * The run record version the store keeps. Only 1 and 2 (the records every
   * Cairn run writes today) are stored; `3` is refused at once with
   * UnsupportedStoreError (`unsupported_store`, backend `redis`, feature
   * `agent-run-v3`).
   */
  checkpointVersion?: 1 | 2 | 3;
}

export interface RedisOpsStore {
  /**
   * Connects now and checks the server (Redis 7 or later, a memory policy that
   * does not evict the store's keys). Rejects with StoreUnreachableError
   * (`store_unreachable`) when the server does not answer within
   * `connectTimeoutMs`, UnsupportedStoreError for a server the store cannot
   * trust. Every other call connects on its own.
   */
  connect(): Promise<void>;
  /** The AgentRunStore: pass it as `session.store`. */
  agentRuns: RedisAgentRunStore;
  /** The LeaseProvider on the server's clock: pass it as `lease.provider`. */
  leases: LeaseProvider;
  /** The model-call circuit breakers, shared by every worker on the server: pass as `deps.breakerStore`. */
  breakers: BreakerStore;
  /** The UI replay journal: pass as `store` of `toAgentStreamResponse` and `resumeAgentStreamResponse`. */
  journal: AgentStreamJournal;
  /** Named budget ledgers: pass `budgets.ledger(name)` as `ledger` of createExecutionContext. */
  budgets: BudgetStore;
  /** The key prefix this store uses. */
  readonly keyPrefix: string;
  /** Closes the connection, after the replies in flight. */
  close(): Promise<void>;
}

/**
 * Opens the Redis ops store.
 *
 * @example
 * const ops = createRedisOpsStore({ url: 'redis://127.0.0.1:6379' });
 * await ops.connect();
 * await runAgent({ model, prompt, session: { store: ops.agentRuns, runId, scope } });
 * await ops.close();
 */
export function createRedisOpsStore(options: RedisOpsStoreOptions): RedisOpsStore {
  if (!options || typeof options !== 'object') throw new InvalidOptionsError('createRedisOpsStore needs { url }.');
  const { checkpointVersion } = options;
  if (checkpointVersion === 3) {
    throw new UnsupportedStoreError('redis', 'agent-run-v3',
      'The Redis store does not keep version 3 run records (checkpointVersion: 3); use the SQLite or PostgreSQL store for them.');
  }
  if (checkpointVersion !== undefined && checkpointVersion !== 1 && checkpointVersion !== 2) {
    throw new InvalidOptionsError(`createRedisOpsStore: checkpointVersion must be 1, 2 or 3, got ${JSON.stringify(checkpointVersion)}.`);
  }
  const keyPrefix = checkPrefix(options.keyPrefix);
  const journalRetentionMs = journalRetention(options.journalRetentionMs, 'createRedisOpsStore');
  const connectTimeoutMs = positive('connectTimeoutMs', options.connectTimeoutMs, 5_000);
  const leaseRetentionMs = nonNegative('leaseRetentionMs', options.leaseRetentionMs, 0);
  const commandTimeoutMs = positive('commandTimeoutMs', options.commandTimeoutMs, 10_000);
  const conn = new RedisConn({ url: options.url, connectTimeoutMs, commandTimeoutMs });
  const k = keys(keyPrefix);
  return {
    keyPrefix,
    connect: () => conn.connect(),
    agentRuns: createRedisAgentRunStore(conn, k),
    leases: createRedisLeaseProvider(conn, k, Math.ceil(leaseRetentionMs)),
    breakers: createRedisBreakerStore(conn, k),
    journal: createRedisJournal(conn, k, journalRetentionMs),
    budgets: createRedisBudgets(conn, k),
    close: () => conn.close(),
  };
}

function nonNegative(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new InvalidOptionsError(`createRedisOpsStore: ${name} must be a finite number of milliseconds, 0 or more, got ${JSON.stringify(value)}.`);
  }
  return value;
}

function positive(name: string, value: unknown, fallback: number): number {
  const ms = nonNegative(name, value, fallback);
  if (ms === 0) throw new InvalidOptionsError(`createRedisOpsStore: ${name} must be above 0.`);
  return ms;
}

export type { RedisAgentRunStore } from './run-store.js';
export { StoreUnreachableError } from './errors.js';
export type { BudgetStore } from '../budgets-kit.js';

/**
 * The store contract: what the engine asks of a run store (AgentRunStore) and
 * of a lease provider (LeaseProvider), and the options and results they take
 * and give. Declared beside the stores; `cairn/agent` re-exports every name.
 * A backend implements these (see docs/stores.md, "Writing a backend").
 */
import type { AgentRunEnvelope, AgentRunStatus } from '../agent/record-types.js';

export interface AgentRunLoadOptions {
  /**
   * The scope the caller acts for. A run stored under another scope is refused
   * with RunIdentityError (code `scope_mismatch`) and none of its data is returned.
   */
  scope?: string;
  /**
   * Also read which save wrote each part of the record, into the envelope's
   * `saves` (for describeRun and the chart's timeline). Without it the loaded
   * envelope is exactly the one saved. A store that does not keep it ignores
   * the option. @default false
   */
  saves?: boolean;
}

export interface AgentRunSaveOptions {
  /**
   * The lease the executor holds. A store that keeps leases beside the runs
   * checks it in the same transaction as the revision, and refuses the save
   * with AgentRunLeaseError (code `lease_lost`) when the lease is no longer this
   * executor's.
   */
  lease?: Lease;
}

export interface AgentRunStore {
  load(runId: string, options?: AgentRunLoadOptions): Promise<AgentRunEnvelope | undefined>;
  /** Resolves after the durable write. Rejects with RevisionConflictError unless `envelope.revision` is the stored one plus one. */
  save(envelope: AgentRunEnvelope, options?: AgentRunSaveOptions): Promise<void>;
  /** Pages through stored runs, newest update first. */
  list?(query?: AgentRunListQuery): Promise<AgentRunListPage>;
  /** Deletes terminal runs (completed, failed, stopped) last saved before `terminalBefore`; returns how many. */
  prune?(options: { terminalBefore: number }): Promise<number>;
}

export interface AgentRunListQuery {
  status?: AgentRunStatus | AgentRunStatus[];
  scope?: string;
  /** Only runs last saved strictly before this time (ms). */
  updatedBefore?: number;
  /** Only runs last saved at or after this time (ms). */
  updatedAfter?: number;
  /** Page size. @default 50 (at most 1000) */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
}

export interface AgentRunSummary {
  runId: string;
  scope: string;
  status: AgentRunStatus;
  revision: number;
  bindingId: string | null;
  createdAt: number;
  updatedAt: number;
  pendingApprovals: number;
  pendingClientCalls: number;
}

export interface AgentRunListPage {
  runs: AgentRunSummary[];
  /** Present when more runs match. */
  nextCursor?: string;
}

/** A claim on a run, held by one executor until it expires or is released. */
export interface Lease {
  key: string;
  owner: string;
  /** Grows with every new holder: a fencing token. */
  token: number;
  /** When the lease lapses unless renewed (ms, on the provider's clock). */
  expiresAt: number;
}

export interface LeaseRenewal {
  lease: Lease;
  /** Someone asked the holder to stop at its next model-step boundary. */
  drain: boolean;
}

/** Where leases live: in memory, SQLite or PostgreSQL. Times come from the provider's clock. */
export interface LeaseProvider {
  /** Takes the lease when it is free or expired; null when another owner holds it. */
  acquire(key: string, owner: string, ttlMs: number): Promise<Lease | null>;
  /** Extends the lease; null when it was lost (expired and taken, or released). */
  renew(lease: Lease, ttlMs: number): Promise<LeaseRenewal | null>;
  /** Gives the lease back; a lease already lost is ignored. */
  release(lease: Lease): Promise<void>;
  /** Asks the current holder of `key` to stop at its next model-step boundary. */
  requestDrain(key: string): Promise<void>;
  /** The lease as stored now, if any (expired ones included). */
  inspect(key: string): Promise<Lease | null>;
}

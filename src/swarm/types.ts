/**
 * Public types of `cairn/swarm`: a DAG of agent tasks, the options of
 * runAgentGroup / resumeAgentGroup, the result, the swarm journal's events,
 * the blackboard, and the store contract a swarm adapter implements.
 */
import type { Agent } from '../sdk/agent.js';
import type { AgentOptions, AgentResult, AgentRunStore, ApprovalResponse, JsonValue } from '../agent/types.js';
import type { ChildContextOptions, ExecutionContext, LedgerEntry, LedgerTotals } from '../policy/index.js';
import type { SerializedError } from '../errors/base.js';
import type { SwarmTaskStatus } from '../../machines/swarm-types.js';

export type { SwarmTaskStatus } from '../../machines/swarm-types.js';

/** What runs a task: engine options (without session, execution or prompt), or an Agent. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- an Agent of any output type
export type SwarmAgent = Omit<AgentOptions<unknown>, 'session' | 'execution' | 'prompt' | 'messages'> | Agent<any>;

/** What a dependent task's input function receives: each dependency's end. */
export interface SwarmDependencyResult {
  taskId: string;
  text: string;
  output?: unknown;
}

/** One task of the DAG. */
export interface SwarmTaskSpec {
  /** Unique in the swarm: letters, digits, `_` and `-`, at most 64. */
  id: string;
  /** Engine options or an Agent, or the name of one in the swarm's `agents`. */
  agent: SwarmAgent | string;
  /** The task's prompt, or a function of its dependencies' results (called when the task starts). */
  input: string | ((dependencies: Record<string, SwarmDependencyResult>) => string);
  /** Tasks that must complete first. @default [] */
  dependsOn?: string[];
  /** A narrowing of the swarm's execution context for this task (a widening is refused: `policy_widened`). */
  policy?: Omit<ChildContextOptions, 'name'>;
}

export interface SwarmSession {
  store: SwarmStore;
  swarmId: string;
  /** The tenant the swarm belongs to: every task's run is saved under it. */
  scope: string;
}

export interface RunAgentGroupOptions {
  session: SwarmSession;
  tasks: SwarmTaskSpec[];
  /**
   * The swarm's policy and budget, shared by every task (each runs under a
   * child context named after it) and persisted with the swarm.
   * @default a root context with no limits
   */
  execution?: ExecutionContext;
  /** Agents a `spawn_task` call may name. Without any, no task is offered `spawn_task`. @default {} */
  agents?: Record<string, SwarmAgent>;
  /** Tasks that run at once. @default 4 */
  concurrency?: number;
  /** Offer `blackboard_read` and `blackboard_write` to every task. @default true */
  blackboard?: boolean;
  /** Most tasks a swarm may hold, spawned ones included. @default 100 */
  maxTasks?: number;
  /** Test seam: the clock the journal and records are stamped with. @default Date.now */
  clock?: { now(): number };
  abortSignal?: AbortSignal;
}

export interface ResumeAgentGroupOptions extends RunAgentGroupOptions {
  /** Verdicts for suspended tasks, by task id (passed to that task's resumeAgent). */
  approvalResponses?: Record<string, ApprovalResponse[]>;
}

/** How one task ended (or stands, for a swarm that is waiting). */
export interface SwarmTaskResult {
  taskId: string;
  status: SwarmTaskStatus;
  /** The run's id: the swarm id and the task id (`<swarmId>.<taskId>`). */
  runId: string;
  /** The run's result, when this leg ran or read it. */
  result?: AgentResult<unknown>;
  /** Set on spawned tasks. */
  spawnedBy?: string;
}

export interface SwarmResult {
  swarmId: string;
  /**
   * `completed`: every task completed. `failed`: every task ended, not all
   * completed. `waiting`: the tasks left wait for approvals (resume with
   * `approvalResponses`). `interrupted`: a save failed or the leg was aborted;
   * resumeAgentGroup goes on from the last save.
   */
  status: 'completed' | 'failed' | 'waiting' | 'interrupted';
  tasks: Record<string, SwarmTaskResult>;
  /** The shared context's ledger totals under the swarm. */
  accounting: LedgerTotals;
  /** Why the leg was interrupted. */
  error?: SerializedError;
}

/** A durable control event of the swarm. */
export type SwarmJournalEventType =
  | 'swarm-started' | 'task-ready' | 'task-started' | 'task-completed' | 'task-failed' | 'task-stopped'
  | 'task-suspended' | 'task-skipped' | 'task-budget-exhausted' | 'task-resumed' | 'spawned' | 'blackboard-written'
  | 'budget-exhausted' | 'swarm-completed' | 'swarm-failed';

export interface SwarmJournalEventInput {
  type: SwarmJournalEventType;
  taskId?: string;
  data?: JsonValue;
}

export interface SwarmJournalEvent extends SwarmJournalEventInput {
  swarmId: string;
  /** 1, 2, 3 ... within the swarm, in the order the events were made durable. */
  seq: number;
  at: number;
}

/** One write on the blackboard: the latest per key is its value. */
export interface BlackboardEntry {
  key: string;
  value: JsonValue;
  /** The task whose call wrote it. */
  taskId: string;
  /** The write's identity: the writing call's run id, model step and call id. A replay of it is applied once. */
  writeId: string;
  /** How many writes of this key landed, this one included. */
  version: number;
  at: number;
}

export interface BlackboardWrite {
  key: string;
  value: JsonValue;
  taskId: string;
  writeId: string;
  at: number;
}

/** The stored swarm: its chart's snapshot, the DAG's fingerprint and the shared ledger. */
export interface SwarmRecord {
  kind: 'cairn-swarm';
  version: 1;
  swarmId: string;
  scope: string;
  /** Grows by one with every save. */
  revision: number;
  machine: { id: 'swarm'; version: number };
  snapshot: JsonValue;
  /** A digest of the tasks as defined (ids, agents' names, inputs, dependencies): a resume must bring the same. */
  definition: string;
  status: 'running' | 'waiting' | 'completed' | 'failed';
  /** Every task's state, as the snapshot holds it (a projection for readers). */
  tasks: Record<string, { status: SwarmTaskStatus; runId: string; dependsOn: string[]; spawnedBy?: string }>;
  /** The shared ledger's entries under the swarm's context, at this save. */
  ledger: { scope: string; entries: LedgerEntry[] } | null;
  createdAt: number;
  updatedAt: number;
}

/**
 * Where a swarm lives: its record, its task rows (each task's run envelope
 * beside its task state), its journal and its blackboard. In memory, SQLite
 * or PostgreSQL; check yours with defineSwarmStoreConformance (cairn/testing).
 */
export interface SwarmStore {
  /** The run store of the swarm's tasks: each envelope is kept in its task's row. */
  readonly runs: AgentRunStore;
  /** The record, or undefined. A record of another scope is refused (RunIdentityError `scope_mismatch`). */
  loadSwarm(swarmId: string, options: { scope: string }): Promise<SwarmRecord | undefined>;
  /**
   * Writes the record (its revision must be the stored one plus one: else
   * RevisionConflictError), its tasks' states, and appends `events` to the
   * journal, all or nothing. Resolves with the appended events.
   */
  saveSwarm(record: SwarmRecord, events: SwarmJournalEventInput[]): Promise<SwarmJournalEvent[]>;
  /** Journal events with seq above `after` (default 0), in order, at most `limit` (default 1000). */
  readJournal(swarmId: string, options?: { after?: number; limit?: number }): Promise<SwarmJournalEvent[]>;
  /**
   * Applies a blackboard write and appends its `blackboard-written` event, at
   * once; a write whose writeId landed before is not applied again
   * (`applied: false`, with the entry it wrote).
   */
  writeBlackboard(swarmId: string, write: BlackboardWrite): Promise<{ applied: boolean; entry: BlackboardEntry }>;
  /** The latest entry of each key (of `key` only, when given), by key. */
  readBlackboard(swarmId: string, key?: string): Promise<BlackboardEntry[]>;
}

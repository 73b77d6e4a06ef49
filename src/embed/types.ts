/**
 * Public types of `cairn/embed`: what the host passes (config, input), the
 * events the run actor takes, what it tells its parent and its listeners, and
 * its snapshot.
 */
import type {
  AgentEvent, AgentOptions, AgentResult, AgentRunStore, ApprovalResponse, ClientToolResult, LeaseOptions, Message,
  PendingApproval, PendingClientCall, ReconciledToolResult, UnknownEffect,
} from '../agent/index.js';

/** The identity of an embedded run: all the host's snapshot keeps of it, with where it stands. */
export interface AgentRunIdentity {
  runId: string;
  scope: string;
}

/**
 * What the host passes when it invokes or spawns the run (`input`). The
 * prompt and messages are needed only to start the run: they are dropped from
 * the snapshot once the run's first save is behind it.
 */
export interface AgentRunInput {
  /** The run's id in the store. @default `config.runId(input)`, else a generated id */
  runId?: string;
  /** The tenant the run belongs to. @default `config.scope` */
  scope?: string;
  prompt?: string;
  messages?: Message[];
  /** Absolute time (ms, on `deps.clock`) after which no model call or effect starts; stored with the run. */
  deadline?: number;
}

/**
 * The agent the actor runs, and where its run lives. Every option of
 * `runAgent` is taken, except those that belong to one run (prompt, messages,
 * deadline: see {@link AgentRunInput}) or that the actor owns (session,
 * abortSignal).
 */
export interface AgentRunLogicConfig<T = string>
  extends Omit<AgentOptions<T>, 'prompt' | 'messages' | 'session' | 'abortSignal' | 'deadline' | 'lease' | 'toolsContext'> {
  /** Where the run is saved: the run's own checkpoint, which the host's snapshot points at. */
  store: AgentRunStore;
  /** The scope of runs whose input names none. */
  scope?: string;
  /** Derives the run id from the input when the input has no `runId`. */
  runId?: (input: AgentRunInput) => string;
  /**
   * Holds the run across processes while a leg works (see docs/agent.md).
   * Needed for the `cairn.drain` event. A leg refused because another
   * executor (a crashed process's, until it lapses) holds the lease is tried
   * again every `leaseRetryMs`.
   */
  lease?: LeaseOptions;
  /** How long to wait before trying a leg again after `lease_held`. @default a third of `lease.ttlMs` (10 s) */
  leaseRetryMs?: number;
  /** The tools' context: a value, or a function of the run's identity, evaluated for every leg (so it is never stored). */
  toolsContext?: Record<string, unknown> | ((run: AgentRunIdentity) => Record<string, unknown>);
  /** Accept verdicts with a bare tool call id (see docs/agent.md). @default false */
  allowBareApprovalIds?: boolean;
}

/** A person's verdict on a pending approval: the `approvalId` and `token` of the approval, as the run issued them. */
export interface AgentRunVerdictEvent extends ApprovalResponse {
  type: 'cairn.verdict';
}

/** The result of a client tool call the run waits for. */
export interface AgentRunClientResultEvent extends ClientToolResult {
  type: 'cairn.client-result';
}

/** Settles the unknown effects a run stopped on: run some again, record what others did. */
export interface AgentRunSettleEvent {
  type: 'cairn.settle';
  retryToolCallIds?: string[];
  reconciledToolResults?: ReconciledToolResult[];
}

/** Cancels the run: a leg in flight is aborted; a run at rest ends the actor with the result it rests on. */
export interface AgentRunCancelEvent {
  type: 'cairn.cancel';
}

/** Asks the leg in flight to stop at its next model-step boundary (needs `config.lease`). */
export interface AgentRunDrainEvent {
  type: 'cairn.drain';
}

/** Goes on with a drained run in this process. */
export interface AgentRunResumeEvent {
  type: 'cairn.resume';
}

/** Every event the run actor takes. */
export type AgentRunActorEvent =
  | AgentRunVerdictEvent
  | AgentRunClientResultEvent
  | AgentRunSettleEvent
  | AgentRunCancelEvent
  | AgentRunDrainEvent
  | AgentRunResumeEvent;

/** Sent to the parent (and emitted) when the run waits for verdicts or client results. */
export interface AgentRunWaitingEvent extends AgentRunIdentity {
  type: 'cairn.waiting';
  /** The id of the actor that sent it (the invoke's or spawn's id). */
  actorId: string;
  pendingApprovals: PendingApproval[];
  pendingClientCalls: PendingClientCall[];
}

/** Sent to the parent (and emitted) when the run stopped on effects nobody knows the outcome of. */
export interface AgentRunUnsettledEvent extends AgentRunIdentity {
  type: 'cairn.unsettled';
  actorId: string;
  unknownEffects: UnknownEffect[];
}

/** Sent to the parent (and emitted) when a drain stopped the run at a step boundary: safe to persist and stop. */
export interface AgentRunDrainedEvent extends AgentRunIdentity {
  type: 'cairn.drained';
  actorId: string;
}

/** What the actor tells its parent. */
export type AgentRunParentEvent = AgentRunWaitingEvent | AgentRunUnsettledEvent | AgentRunDrainedEvent;

/** What `actor.on(...)` hears: every event of the run's legs, and the parent events. */
export type AgentRunEmitted<T = string> = AgentEvent<T> | AgentRunParentEvent;

/**
 * Where the run stands:
 * - `running`: a leg is in flight (or about to start, or waiting for a lease);
 * - `waiting`: suspended on approvals or client calls;
 * - `unsettled`: stopped on unknown effects until `cairn.settle`;
 * - `drained`: stopped at a step boundary until `cairn.resume` or a restore;
 * - `ended`: the actor is done (or failed).
 */
export type AgentRunPhase = 'running' | 'waiting' | 'unsettled' | 'drained' | 'ended';

/** Answers the host sent, held until a leg carries them to the run (which then records them in its store). */
export interface AgentRunAnswers {
  approvalResponses: ApprovalResponse[];
  clientToolResults: ClientToolResult[];
  retryToolCallIds: string[];
  reconciledToolResults: ReconciledToolResult[];
}

/** The part of the actor's state that is persisted. */
export interface AgentRunActorState extends AgentRunIdentity {
  phase: AgentRunPhase;
  /** The start input, until the run's first save is behind it. */
  start: { prompt?: string; messages?: Message[]; deadline?: number } | null;
  /** Answers received and not yet carried by a leg. */
  queued: AgentRunAnswers;
  /** Answers carried by the leg in flight: sent again if a restore finds that leg cut off. */
  inFlight: AgentRunAnswers | null;
  cancelled: boolean;
}

/** The actor's live state: the persisted part, plus what the run waits for (read from the run, never persisted). */
export interface AgentRunActorContext extends AgentRunActorState {
  pendingApprovals: PendingApproval[];
  pendingClientCalls: PendingClientCall[];
  unknownEffects: UnknownEffect[];
}

export type AgentRunActorSnapshot<T = string> =
  | { status: 'active'; output: undefined; error: undefined; context: AgentRunActorContext }
  | { status: 'done'; output: AgentResult<T>; error: undefined; context: AgentRunActorContext }
  | { status: 'error'; output: undefined; error: unknown; context: AgentRunActorContext }
  | { status: 'stopped'; output: undefined; error: undefined; context: AgentRunActorContext };

/**
 * The persisted snapshot: identity, phase and held answers. No transcript, no
 * receipts, no result: a done or failed actor keeps its status only, and a
 * restore reads the result from the store again.
 */
export interface PersistedAgentRunActorSnapshot {
  status: 'active' | 'done' | 'error' | 'stopped';
  output: undefined;
  error: undefined;
  context: AgentRunActorState;
}

/**
 * What the actor implementations of one run share: options, the receipts and
 * approvals of the record, the permits of this process, the event sink.
 */
import type { SerializedError } from '../errors/index.js';
import type { NormalizedOptions } from '../agent/options.js';
import type {
  AgentEvent, AgentRunEnvelope, AgentToolReceipt, AgentWarning, JsonValue, Message,
} from '../agent/types.js';
import type { RunContext } from '../../machines/index.js';

export interface HostState<T = unknown> {
  opts: NormalizedOptions<T>;
  runId: string;
  receipts: Record<string, AgentToolReceipt>;
  approvals: AgentRunEnvelope['approvals'];
  /**
   * Single-use permits, minted only by a durable write made in this process
   * (the `executing` receipt, the verifier's attempt count). A restarted
   * invocation after a restore finds none.
   */
  permits: Set<string>;
  /** Raw outcomes of effects that ran in this process, until their receipt is written. */
  rawOutcomes: Map<
    string,
    | { kind: 'result'; value: JsonValue }
    | { kind: 'threw'; error: SerializedError }
    /** The tool returned something its receipt cannot hold (not JSON, or too large). */
    | { kind: 'unstorable'; error: SerializedError }
  >;
  warnings: AgentWarning[];
  /** Calls (by receipt key) this resume asked to run once more; each is taken once. */
  retryKeys: Set<string>;
  signal: AbortSignal;
  emit(event: AgentEvent<T>): void;
  /** The run actor's context right now. */
  context(): RunContext;
  /** Durable save of the record; rejects (and fails the run) when the store does. */
  save(): Promise<void>;
  deadlinePassed(): boolean;
  /** The signal an effect gets: its actor's own, the run's abort signal, and the run's deadline. */
  effectSignal(own: AbortSignal): AbortSignal;
}

export const messagesOf = (context: RunContext) => context.messages as unknown as Message[];

/**
 * What a run leg keeps of its handoffs (docs/delegation.md#handoffs), as the
 * run's normalized options hold it. The implementation is in handoff.ts.
 * @internal
 */
export interface HandoffLeg {
  /** The run's own agent's name (`name`, default `root`). */
  readonly rootName: string;
  /** The agent whose model, instructions and tools are in the options now; null: the run's own. */
  readonly active: string | null;
  /** Every transfer tool of the handoff graph, by tool name, with the agent it hands the run to. */
  readonly transfers: Readonly<Record<string, string>>;
}

/** What the run's snapshot keeps of its handoffs (machines/run-handoff.ts): part of RunInput and RunContext. */

export interface HandoffInput {
  /** Transfer tools of the run's handoffs, by tool name, each with the agent it hands the run to; absent or null without handoffs. */
  handoffs?: Record<string, string> | null;
}

export interface HandoffState {
  /** The handoff agent that drives the run since its last handoff; absent or null while the run's own agent does. */
  activeAgent?: string | null;
}

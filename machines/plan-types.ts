/**
 * The plans the runtime gives the machines (src/runtime/plan.ts decides them
 * from a leg's options): which stages of the run's step and of each tool's
 * calls have work. Plain JSON, stored with the snapshot.
 */

/**
 * Which stages of the tool path have work to do for one tool, as the leg that
 * hosts the run configured it. A stage with no work is passed by a guarded
 * transition instead of an invoked actor. Plain data decided by the runtime
 * from the run's options (never by the chart), and refreshed from the options
 * of every leg that restores the run; a call without one (null) takes every
 * stage.
 */
export interface CallPlan {
  /** onToolCall guardrails are set: they see every call. */
  guardrails: boolean;
  /**
   * The arguments are checked on the way into the policy stage: the tool's
   * parameters are a JSON Schema (a check that runs no user code and needs no
   * wait) and no guardrail can rewrite the arguments after it.
   */
  argumentsInline: boolean;
  /** The tool may need approval (needsApproval is true or a predicate). */
  approval: boolean;
  /** The run has an abort signal, so admission can refuse even without a deadline. */
  admission: boolean;
  /** The tool runs here (it has execute): not a client tool. */
  executes: boolean;
  /** The tool is marked replay: 'idempotent'. */
  idempotent: boolean;
  /** Validation, a projection or onToolResult runs on the tool's result. */
  projects: boolean;
  /** The run is saved (it has a session): receipts are made durable before effects. */
  durable: boolean;
  /** The tool is a sub-agent (agentTool): its effect is a child run (machines/sub-agent.ts). */
  delegates?: boolean;
  /**
   * The tool's only step between its raw result and its answer is a projection
   * the engine knows to be pure and total (Cairn's own MCP projection): no user
   * code runs and it cannot fail, so it is applied on the transition that keeps
   * the raw result, and one commit holds both.
   */
  projectsInline?: boolean;
}

/** The run's plan: whether it is saved, whether an execution policy checks each batch, and each tool's call plan. */
export interface RunPlan {
  durable: boolean;
  policy: boolean;
  calls: Record<string, CallPlan>;
}

/** The typed error of a run's handoffs (docs/delegation.md#handoffs, docs/errors.md). */
import { CairnError } from '../errors/index.js';

export type HandoffErrorCode = 'handoff_invalid' | 'handoff_cycle' | 'handoff_duplicate' | 'handoff_tool_conflict';

/**
 * The run's `handoffs` cannot be used: a target that is not an agent or has
 * bad options (`handoff_invalid`), an agent that can be handed the run back
 * (`handoff_cycle`), two agents of one name (`handoff_duplicate`), or a
 * transfer tool whose name is one of the agent's own tools
 * (`handoff_tool_conflict`). Thrown before anything is read, called or
 * written. `agent` names the agent concerned; `path` is the cycle's agents.
 */
export class HandoffError extends CairnError {
  declare readonly code: HandoffErrorCode;
  readonly agent: string;
  readonly path?: string[];

  constructor(code: HandoffErrorCode, agent: string, message: string, options: { path?: string[]; cause?: unknown } = {}) {
    super(code, message, { fault: 'user', cause: options.cause });
    this.name = 'HandoffError';
    this.agent = agent;
    if (options.path) this.path = options.path;
  }
}

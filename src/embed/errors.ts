/** The error an embedded run's actor fails with: the failed result, as a CairnError. */
import { CairnError, isCairnErrorCode, type CairnErrorCode, type Fault } from '../errors/index.js';
import type { AgentResult } from '../agent/index.js';

export type FailedAgentResult<T = unknown> = Extract<AgentResult<T>, { status: 'failed' }>;

const USER_CODES: ReadonlySet<string> = new Set([
  'invalid_options', 'invalid_envelope', 'tool_context_invalid', 'binding_changed', 'run_not_found', 'scope_mismatch',
  'run_busy', 'checkpoint_version_unsupported', 'tool_not_allowed', 'deadline_exceeded', 'budget_exceeded',
  'unpriced_model', 'skill_access_denied',
]);

function faultOf(code: CairnErrorCode): Fault {
  if (USER_CODES.has(code)) return 'user';
  if (code === 'invalid_response') return 'model';
  if (code === 'internal') return 'library';
  return 'dependency';
}

/**
 * A run the actor drove ended `failed` (or was refused). `code` is the failed
 * result's code; `result` is that result, `retry` included when the cause was
 * transient (`resumeAgent({ ..., retryFailed: true })` can go on with it).
 *
 * @example
 * onError: { actions: ({ event }) => {
 *   if (AgentRunFailedError.isInstance(event.error)) console.log(event.error.code, event.error.runId);
 * } }
 */
export class AgentRunFailedError<T = unknown> extends CairnError {
  readonly runId: string;
  readonly result: FailedAgentResult<T>;
  constructor(result: FailedAgentResult<T>) {
    const code: CairnErrorCode = isCairnErrorCode(result.error.code) ? result.error.code : 'internal';
    super(code, `Run ${result.runId} failed: ${result.error.message}`, {
      fault: faultOf(code),
      isRetryable: result.retry !== undefined,
      cause: result.error,
    });
    this.name = 'AgentRunFailedError';
    this.runId = result.runId;
    this.result = result;
  }
}

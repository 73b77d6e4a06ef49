/**
 * The identity of an approval request, apart from the envelope so the stored
 * record's migrations can compute it without importing the envelope that
 * runs them.
 */
import { digestOf } from './digest.js';

/** An approval id is bound to the run, the step, the call, the tool and the arguments. */
export function approvalIdFor(runId: string, call: { modelStep: number; toolCallId: string; toolName: string; args: unknown }): string {
  const digest = digestOf({ runId, step: call.modelStep, toolCallId: call.toolCallId, toolName: call.toolName, args: call.args });
  return `${call.toolCallId}@${digest.slice('sha256:'.length, 'sha256:'.length + 24)}`;
}

/** A sub-agent call's child run id (docs/decisions, "Sub-agents"). (Internal to Cairn.) */
import { createHash } from 'node:crypto';

/**
 * The child run's id: the same for the same call of the same parent run (a
 * resume finds the child it started), different for every other call, and
 * of one length however deep the nesting.
 */
export function childRunIdOf(parentRunId: string, modelStep: number, toolCallId: string): string {
  const hash = createHash('sha256').update(JSON.stringify([parentRunId, modelStep, toolCallId])).digest('hex');
  return `sub_${hash.slice(0, 32)}`;
}

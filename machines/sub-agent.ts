/**
 * A sub-agent call (agentTool): the effect stage of the tool-call chart for a
 * tool whose effect is a child run. The call takes the same path as any other
 * up to its durable `executing` receipt; then, instead of `execution`, it
 * invokes `runChild`, which drives the child run (a normal durable run in the
 * same store, with its own receipts) to its next rest. The child's answer is
 * the call's result and goes through the result receipt and checkpoint like a
 * tool's. A child that waits on approvals parks the call in `childSuspended`
 * (the run suspends); one whose own effect is unknown parks it in
 * `childNeedsReconciliation` (the run waits on an operator). A resume sends
 * RECHECK and the child is driven again under the same id: driving it is
 * idempotent by construction, since the child answers from its own record.
 * Part of the tool-call machine (tool-call.ts).
 */
import { and, assign } from 'xstate';
import { receiptBase, toolCallSetup } from './tool-call-setup.js';
import type { CallReceipt, ToolCallContext } from './types.js';
import type { RunChildOutput } from './sub-agent-types.js';

export type { ChildRunFacts, RunChildInput, RunChildOutput } from './sub-agent-types.js';

type Done = { output: RunChildOutput };

/** The receipt of a call whose child answered: its answer as the raw result (or its failure), with the child named. */
function answered(c: ToolCallContext, output: RunChildOutput): CallReceipt | null {
  if (output.kind !== 'result' && output.kind !== 'threw') return c.receipt;
  const base = { ...receiptBase(c, true), child: { runId: output.child.runId } };
  return output.kind === 'result' ? { ...base, status: 'executed', rawResult: output.value } : { ...base, status: 'failed', error: output.error };
}

/** The receipt of a call whose child rests: `suspended`, with what the child waits on. */
function resting(c: ToolCallContext, output: RunChildOutput): CallReceipt {
  const child = output.kind === 'suspended' || output.kind === 'reconcile' ? output.child : undefined;
  return { ...receiptBase(c, true), status: 'suspended', ...(child ? { child } : {}) };
}

export const delegationState = toolCallSetup.createStateConfig({
  initial: 'runningChild',
  states: {
    // The child run, started or resumed under its derived id, until it ends or rests.
    runningChild: {
      tags: ['effect'],
      invoke: {
        src: 'runChild',
        id: 'runChild',
        input: ({ context }) => ({ modelStep: context.modelStep, toolCallId: context.toolCallId, toolName: context.toolName, args: context.args }),
        onDone: [
          { guard: { type: 'outputIs', params: { kind: 'suspended' } }, target: 'childSuspended', actions: assign(({ context, event }) => ({ receipt: resting(context, (event as unknown as Done).output) })) },
          { guard: { type: 'outputIs', params: { kind: 'reconcile' } }, target: 'childNeedsReconciliation', actions: assign(({ context, event }) => ({ receipt: resting(context, (event as unknown as Done).output) })) },
          // The child's answer is the call's result, committed as a tool's is (see tool-call-effect.ts, `execution`).
          { guard: and(['resultIsAnswer', 'runCheckpoints']), target: '#toolCall.completed', actions: [assign(({ context, event }) => ({ receipt: answered(context, (event as unknown as Done).output) })), 'projectAsIs'] },
          { guard: 'resultIsAnswer', target: '#toolCall.checkpoint', actions: [assign(({ context, event }) => ({ receipt: answered(context, (event as unknown as Done).output) })), 'projectAsIs'] },
          { guard: 'resultNeedsNoCommit', target: '#toolCall.resultReceipt.projecting', actions: assign(({ context, event }) => ({ receipt: answered(context, (event as unknown as Done).output) })) },
          { target: '#toolCall.resultReceipt.recording', actions: assign(({ context, event }) => ({ receipt: answered(context, (event as unknown as Done).output) })) },
        ],
        onError: { target: '#toolCall.failed', actions: 'noteError' },
      },
    },
    // The child waits on approvals; so does the run. A resume's RECHECK drives the child again with the verdicts.
    childSuspended: {
      tags: ['suspended', 'awaiting-child'],
      entry: 'noteSuspended',
      on: { RECHECK: { target: 'runningChild' } },
    },
    // An effect of the child is unknown: reconciled at the child, never run again by the parent.
    childNeedsReconciliation: {
      tags: ['needs-reconciliation'],
      entry: 'noteUnknown',
      on: { RECHECK: { target: 'runningChild' } },
    },
  },
});

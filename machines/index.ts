import type { AnyStateMachine } from 'xstate';
import { runMachine, RUN_MACHINE_VERSION, RUN_PROMPTS, callPhase } from './run.js';
import { byStepThenCall, receiptKey, toolCallMachine, TOOL_CALL_MACHINE_VERSION } from './tool-call.js';
import { memoryIntentMachine, MEMORY_INTENT_MACHINE_VERSION } from './memory-intent.js';
import {
  versionedIntentMachine, VERSIONED_INTENT_MACHINE_VERSION, intentEntryOf, intentErrorOf, PERMANENT_INTENT_ERROR_CODES,
} from './memory-intent-versioned.js';
import { swarmMachine, SWARM_MACHINE_VERSION } from './swarm.js';

export { runMachine, RUN_MACHINE_VERSION, RUN_PROMPTS, callPhase, toolCallMachine, TOOL_CALL_MACHINE_VERSION, byStepThenCall, receiptKey };
export { memoryIntentMachine, MEMORY_INTENT_MACHINE_VERSION };
export { versionedIntentMachine, VERSIONED_INTENT_MACHINE_VERSION, intentEntryOf, intentErrorOf, PERMANENT_INTENT_ERROR_CODES };
export { swarmMachine, SWARM_MACHINE_VERSION };
export type * from './types.js';
export type * from './memory-intent-types.js';
export type * from './memory-intent-versioned-types.js';
export type * from './swarm-types.js';
export type * from './sub-agent-types.js';
export type * from './run-handoff-types.js';
export type { HandoffOutput } from './run-handoff-logic.js';

export interface MachineCatalogEntry {
  name: string;
  title: string;
  description: string;
  machine: AnyStateMachine;
}

/** The machines Cairn runs, for charts and documentation. */
export const machineCatalog: MachineCatalogEntry[] = [
  {
    name: 'run',
    title: 'Run',
    description:
      'One native run: the tool loop (model call, turn recorded, batch policy, calls dispatched and awaited, step checkpoint; ' +
      'the policy only under an execution policy, the checkpoint only with a store), ' +
      'finalization with schema repair, verification, and the terminal states. A resume enters `settling`, which hands every ' +
      'waiting call its answer before any model call.',
    machine: runMachine,
  },
  {
    name: 'tool-call',
    title: 'Tool call',
    description:
      'One tool call, through the eight stages in order: finish-reason gate, policy and guardrails (then the check of its ' +
      'arguments against the tool\'s parameters), approval, admission, ' +
      'effect identity (the durable `executing` receipt), execution, result receipt and projection, checkpoint. Each way a ' +
      'call can end is its own final state; `unknownEffect` waits for reconciliation. A stage with no work for the call ' +
      '(no guardrails, no approval, nothing for admission to check, no projection, no store) is passed by a guarded ' +
      'transition, as the call\'s plan says; a first run of a tool that runs here opens its `executing` receipt on the ' +
      'way into the receipt write.',
    machine: toolCallMachine,
  },
  {
    name: 'memory-intent',
    title: 'Memory intent',
    description:
      'One extraction of a completed run into memory, invoked by the run after its terminal commit: the memory LLM plans ' +
      '(`pending`), the plan\'s size is saved before any write (`planned`), deletions then writes are applied (`writing`), ' +
      'and it ends `completed`, `partial` or `failed`. A restored intent, and a reconciliation (which starts in `opening`), ' +
      'first count what the memory store holds of the operation (`confirming`): all of it settles the intent, part of it ' +
      'makes it partial, none runs the extraction again.',
    machine: memoryIntentMachine,
  },
  {
    name: 'versioned-intent',
    title: 'Versioned memory intent',
    description:
      'One write of a V3 run into a versioned memory session (`versionedMemory`), through intent, plan, commit and ' +
      'acknowledgment. An extraction (`extract`) starts `intended` (saved in the terminal commit), builds its claim, saves ' +
      'it (`claiming`, then `planned`), has the session plan and commit in one call, and saves the acknowledgment with the ' +
      'receipt (`acknowledging`, then `acknowledged`). A commit that throws leaves the intent planned with its error ' +
      '(`stalled`); a receipt of another request digest is saved `failed`; a save that throws ends in `unsaved`. Settling a ' +
      'planned intent reads its receipt back first (`reading`). A tool write (`tool`) invokes nothing: EXECUTED, COMPLETED ' +
      'and FAILED move it with the tool call\'s receipts.',
    machine: versionedIntentMachine,
  },
  {
    name: 'swarm',
    title: 'Swarm',
    description:
      'One DAG of agent tasks (`runAgentGroup`): each step (a task\'s end, a spawn, a budget refusal, verdicts for suspended ' +
      'tasks) passes through `scheduling`, which skips tasks behind a dependency that did not complete, readies tasks whose ' +
      'dependencies all completed and starts ready ones up to the concurrency. The host saves each next snapshot with its ' +
      'journal events before it starts the runs the snapshot marks running. It rests in `waiting` when only suspended tasks ' +
      'are left, and ends `completed` (every task completed) or `failed`.',
    machine: swarmMachine,
  },
];

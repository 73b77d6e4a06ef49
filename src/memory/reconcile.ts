/**
 * The memory part of reconcileAgentRun: settles an extraction that an
 * interruption or a failed save left pending (or failed), by the rules of
 * the memory-intent chart. Every planned mutation found in the store: the
 * extraction is completed without another memory LLM call. Some of them: it
 * is failed with `memory_extraction_partial` and never runs again. None (or
 * nothing was planned yet): it runs now. Each save of the run's record goes
 * through `save`, which the caller fences with its lease.
 */
import { createActor, type SnapshotFrom } from 'xstate';
import type { RunContext } from '../../machines/index.js';
import type { MemoryIntentContext, MemoryIntentOutput } from '../../machines/memory-intent-types.js';
import type { AgentRunEnvelope, JsonValue, Message } from '../agent/types.js';
import { Permits } from '../runtime/permits.js';
import { memoryIntentLogic } from './run-actors.js';
import { extractionOf, MEMORY_INTENT_CHILD } from './run-envelope.js';
import { bindMemoryLeg } from './run-leg.js';
import type { RunMemoryOptions } from './run-options.js';
import type { MemoryWarning } from './run-types.js';

type IntentSnapshot = SnapshotFrom<typeof memoryIntentLogic>;
interface StoredRun {
  status: string;
  value: unknown;
  context: RunContext;
  children?: Record<string, { src?: string; snapshot?: { status?: string; context?: MemoryIntentContext } } | undefined>;
}

export interface MemoryReconciliation {
  /** Where the extraction stands once the call is done; undefined when the run has none to settle. */
  memory?: 'completed' | 'failed';
  warnings: MemoryWarning[];
}

/** The stored run with the intent as it stands now: its snapshot while it moves, its outcome once it ended. */
function withIntent(stored: AgentRunEnvelope, intent: IntentSnapshot, outcome: MemoryIntentOutput | null): AgentRunEnvelope {
  const snapshot = structuredClone(stored.snapshot) as unknown as StoredRun;
  const children = { ...(snapshot.children ?? {}) };
  const memory = snapshot.context.memory!;
  if (outcome) {
    delete children[MEMORY_INTENT_CHILD];
    memory.extraction = outcome;
    // What the run would have saved had it finished its end itself.
    snapshot.value = 'completed';
    snapshot.status = 'done';
  } else {
    children[MEMORY_INTENT_CHILD] = { src: 'memoryIntent', snapshot: memoryIntentLogic.getPersistedSnapshot(intent) as never };
  }
  snapshot.children = children;
  const context = intent.context;
  const extraction = outcome
    ? extractionOf(outcome)
    : context.planned === null
      ? { operationId: context.operationId, status: 'pending' as const }
      : { operationId: context.operationId, status: 'planned' as const, planned: context.planned };
  return { ...stored, snapshot: snapshot as unknown as JsonValue, memory: { ...stored.memory!, extraction } };
}

export async function reconcileMemory(
  stored: AgentRunEnvelope,
  memory: RunMemoryOptions,
  save: (envelope: AgentRunEnvelope) => Promise<AgentRunEnvelope>,
  signal: AbortSignal,
): Promise<MemoryReconciliation> {
  const warnings: MemoryWarning[] = [];
  const extraction = stored.memory?.extraction;
  if (!extraction) return { warnings };
  if (extraction.status === 'completed') return { memory: 'completed', warnings };
  const partial = (mutations: number, planned: number | undefined) => {
    const warning: MemoryWarning = {
      type: 'warning', setting: 'memory', code: 'memory_extraction_partial',
      message: `The extraction ${extraction.operationId} of run ${stored.runId} applied ${mutations} of its ${planned ?? '?'} planned memory mutations; it is not run again.`,
    };
    warnings.push(warning);
    memory.seams.logger?.warn(warning.message);
  };
  if (extraction.status === 'failed' && extraction.error?.code === 'memory_extraction_partial') {
    partial(extraction.mutations ?? 0, extraction.planned);
    return { memory: 'failed', warnings };
  }
  const run = stored.snapshot as unknown as StoredRun;
  const kept = run.children?.[MEMORY_INTENT_CHILD]?.snapshot?.context ?? (run.context.memory?.extraction as Partial<MemoryIntentOutput> | null);
  const deletes = (kept as { deletes?: number } | null)?.deletes ?? 0;
  let current = stored;
  const intent = createActor(memoryIntentLogic, {
    input: {
      runId: stored.runId, operationId: extraction.operationId, mode: 'settle', inputCount: run.context.memory?.inputCount ?? 0,
      planned: extraction.planned ?? null, deletes,
    },
  });
  bindMemoryLeg(intent.system, {
    runId: stored.runId,
    memory,
    permits: new Permits(),
    signal,
    emit: (warning) => warnings.push(warning),
    save: async () => {
      current = await save(withIntent(current, intent.getSnapshot(), null));
    },
    transcript: () => run.context.messages as unknown as Message[],
    charge: { runId: stored.runId, execution: memory.execution, emit: (warning) => warnings.push(warning), warned: new Set() },
  });
  const outcome = await new Promise<MemoryIntentOutput>((resolve, reject) => {
    intent.subscribe({ complete: () => resolve(intent.getSnapshot().output!), error: reject });
    intent.start();
  });
  if (outcome.status === 'partial') partial(outcome.mutations, outcome.planned ?? undefined);
  await save(withIntent(current, intent.getSnapshot(), outcome));
  return { memory: outcome.status === 'completed' ? 'completed' : 'failed', warnings };
}

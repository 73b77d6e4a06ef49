/**
 * `AgentRunEnvelope.memory`, read from the run actor's persisted snapshot: the
 * memory record its context keeps and, while the extraction runs, the
 * memory-intent child's own snapshot.
 */
import type { RunMemory } from '../../machines/index.js';
import type { MemoryIntentContext, MemoryIntentOutput } from '../../machines/memory-intent-types.js';
import type { AgentRunMemory, AgentRunMemoryExtraction, AgentRunMemoryRecall } from './run-types.js';
import type { MemoryScope } from './types.js';

/** The intent's id among the run's children (machines/run-memory.ts). */
export const MEMORY_INTENT_CHILD = 'memoryIntent';

interface SnapshotLike {
  context: { memory?: RunMemory | null };
  children?: Record<string, { snapshot?: { status?: string; value?: unknown; context?: unknown } } | undefined>;
}

/** Where an intent that is still moving stands: `planned` once the plan's size was saved. */
function liveExtraction(context: MemoryIntentContext): AgentRunMemoryExtraction {
  return context.planned === null
    ? { operationId: context.operationId, status: 'pending' }
    : { operationId: context.operationId, status: 'planned', planned: context.planned };
}

/** An intent's outcome as the envelope says it: a partial pass is failed, with its code. */
export function extractionOf(outcome: MemoryIntentOutput | { operationId: string; status: 'pending' }): AgentRunMemoryExtraction {
  if (outcome.status === 'pending') return { operationId: outcome.operationId, status: 'pending' };
  return {
    operationId: outcome.operationId,
    status: outcome.status === 'completed' ? 'completed' : 'failed',
    ...(outcome.planned !== null ? { planned: outcome.planned } : {}),
    mutations: outcome.mutations,
    ...(outcome.error ? { error: { ...outcome.error } } : {}),
  };
}

export function memoryOfSnapshot(snapshot: SnapshotLike): AgentRunMemory | undefined {
  const memory = snapshot.context.memory;
  if (!memory) return undefined;
  const child = snapshot.children?.[MEMORY_INTENT_CHILD]?.snapshot;
  const extraction = child?.status === 'active' && child.context
    ? liveExtraction(child.context as MemoryIntentContext)
    : memory.extraction ? extractionOf(memory.extraction) : undefined;
  return {
    scope: { ...memory.scope } as MemoryScope,
    ...(memory.recall ? { recall: memory.recall as unknown as AgentRunMemoryRecall } : {}),
    ...(extraction ? { extraction } : {}),
  };
}

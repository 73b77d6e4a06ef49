/**
 * What a new run with memory does before its actor starts: the recall (once,
 * before the first model call) and the memory record its snapshot starts
 * with. A resume does neither: the stored history already holds the recall.
 */
import type { RunInput, Json } from '../../machines/index.js';
import type { ModelMessage } from '../models/types.js';
import { recallMemories } from './recall.js';
import type { MemoryWarning } from './run-leg.js';
import type { RunMemoryOptions } from './run-options.js';

export async function prepareMemory(
  run: { runId: string; signal: AbortSignal; emit(warning: MemoryWarning): void; generateId(): string },
  memory: RunMemoryOptions,
  input: RunInput,
): Promise<void> {
  const inputCount = input.messages.length;
  const charge = { runId: run.runId, execution: memory.execution, emit: (w: MemoryWarning) => run.emit(w), warned: new Set<string>() };
  const recall = await recallMemories(charge, memory, input.messages as unknown as ModelMessage[], run.signal);
  input.messages = JSON.parse(JSON.stringify(recall.messages)) as Json[];
  input.memory = {
    scope: { ...memory.scope } as Record<string, string>,
    recall: JSON.parse(JSON.stringify(recall.record)) as Json,
    operationId: memory.extracts ? run.generateId() : null,
    inputCount,
    extraction: null,
  };
}

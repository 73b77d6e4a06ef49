/**
 * Memory LLM and embedder calls are charged to the run's execution context,
 * as model calls are: each call reserves an estimate in the context's ledger
 * before it is made (a ceiling refuses it with BudgetError), and settles with
 * the usage it reports. A call that reports none stays held as unknown, and
 * the run says so once (`unaccounted-usage`).
 */
import { BudgetError } from '../errors/index.js';
import type { ExecutionContext } from '../policy/index.js';
import type { MemoryCallUsage, MemoryWarning } from './run-types.js';

export interface ChargeTarget {
  runId: string;
  execution: ExecutionContext | null;
  emit(warning: MemoryWarning): void;
  /** Kinds already warned about in this leg. */
  warned: Set<string>;
}

/**
 * Runs `call` under an admission of its estimate; `kind` names the model in
 * the ledger (`memory:llm`, `memory:embedder`), `key` the call within the run
 * (a call made again under the same key, after a crash, finds its entry).
 */
export async function charged<T>(
  target: ChargeTarget,
  kind: 'llm' | 'embedder',
  key: string,
  requestChars: number,
  call: () => Promise<{ value: T; usage: MemoryCallUsage | undefined }>,
): Promise<T> {
  const execution = target.execution;
  if (!execution) return (await call()).value;
  const model = `memory:${kind}`;
  const estimate = execution.estimate({ model, requestChars, maxOutputTokens: kind === 'embedder' ? 1 : undefined });
  const id = `${target.runId}:memory:${key}`;
  const admitted = await execution.ledger.admit({
    id, scope: execution.path, runId: target.runId, model, usd: null,
    tokens: estimate.inputTokens + (kind === 'embedder' ? 0 : estimate.outputTokens), ceilings: [...execution.policy.ceilings], at: execution.now(),
  });
  if (!admitted.admitted) {
    throw new BudgetError('budget_exceeded', `The budget of ${admitted.scope} refused a memory ${kind === 'llm' ? 'LLM' : 'embedder'} call.`);
  }
  let result: { value: T; usage: MemoryCallUsage | undefined };
  try {
    result = await call();
  } catch (error) {
    await execution.ledger.settle(id, { status: 'unknown' }).catch(() => undefined);
    throw error;
  }
  const usage = result.usage;
  if (usage && Number.isFinite(usage.inputTokens)) {
    await execution.ledger.settle(id, { status: 'committed', usd: null, tokens: usage.inputTokens + (usage.outputTokens ?? 0) });
  } else {
    await execution.ledger.settle(id, { status: 'unknown' });
    if (!target.warned.has(kind)) {
      target.warned.add(kind);
      target.emit({
        type: 'warning', setting: 'memory', code: 'unaccounted-usage',
        message: `The memory ${kind === 'llm' ? 'LLM' : 'embedder'} reported no usage: its calls are held in the execution ledger at their estimate.`,
      });
    }
  }
  return result.value;
}

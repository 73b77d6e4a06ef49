/** What every result carries, read from the run's context. */
import type { RunContext } from '../../machines/index.js';
import { toJson } from './json.js';
import type { Accounting, AgentWarning, Message } from './types.js';

/** The accounting of a run that has used nothing and has no ledger. */
export function emptyAccounting(): Accounting {
  return {
    spent: { inputTokens: 0, outputTokens: 0, usd: null },
    reserved: { usd: 0, tokens: 0 },
    committed: { usd: 0, tokens: 0 },
    unknown: { usd: 0, tokens: 0 },
  };
}

/**
 * `shared`: the result holds the context's own transcript, not a copy (a live leg's result, which
 * detachResult hands its caller; a save's stored result, which replaces it).
 */
export function resultBase(runId: string, context: RunContext, warnings: readonly AgentWarning[], shared = false) {
  const messages = shared ? context.messages as unknown as Message[] : toJson<Message[]>(context.messages);
  const lastAssistant = [...messages].reverse().find((m) => m.role === 'assistant');
  return {
    runId,
    messages,
    usage: { ...context.usage },
    // Only a run answered by more than one model (a fail-over) needs it: each model has its own price.
    ...(Object.keys(context.usageByModel ?? {}).length > 1 ? { usageByModel: structuredClone(context.usageByModel!) } : {}),
    steps: context.step,
    // Token totals; a leg with an execution context adds USD and its ledger's totals (RunHost.accounting).
    accounting: {
      ...emptyAccounting(),
      spent: { inputTokens: context.usage.inputTokens, outputTokens: context.usage.outputTokens, usd: null },
    } as Accounting,
    text: context.candidate?.text ?? (lastAssistant?.role === 'assistant' ? lastAssistant.content : ''),
    warnings: [...warnings],
  };
}

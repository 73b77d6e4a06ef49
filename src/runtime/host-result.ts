/**
 * What a leg returns: its result, read from the run actor's snapshot, and its
 * accounting under the execution context.
 */
import type { SnapshotFrom } from 'xstate';
import { serializeError } from '../errors/index.js';
import { toJson } from '../agent/json.js';
import type { runMachine } from '../../machines/index.js';
import type { Accounting, AgentResult, JsonValue, StopReason } from '../agent/types.js';
import { parseModelKey } from '../models/resolve.js';
import type { ExecutionContext } from '../policy/index.js';
import { roundAmounts, roundUsd } from '../policy/ledger.js';
import { usdOf } from './budget.js';
import { pendingOf, unknownEffectsOf, type EnvelopeExtras, type PersistedRun } from './record.js';

type RunSnapshot = SnapshotFrom<typeof runMachine>;
type ResultBase = Omit<Extract<AgentResult<unknown>, { status: 'completed' }>, 'status' | 'output'>;

/** The result of a run at rest in `snapshot`; `persisted` gives its record when the result lists waiting or unknown calls. */
export function resultOfSnapshot<T>(snapshot: RunSnapshot, base: ResultBase, persisted: () => PersistedRun): AgentResult<T> {
  const context = snapshot.context;
  // `ending`: the run completed and its terminal commit (then its memory's extraction) is under way.
  if (snapshot.matches('completed') || snapshot.matches('ending')) return { ...base, status: 'completed', output: context.candidate!.output as T };
  // `failing` / `stopping`: the run ended so, and its terminal commit (then its chat write) is under way.
  if (snapshot.matches('failed') || snapshot.matches('failing')) {
    const { retry, ...error } = context.error ?? { name: 'Error', code: 'internal', message: 'The run failed.' };
    // The machine keeps errors as plain data; serialized again, a code outside Cairn's list reads `internal`.
    return { ...base, status: 'failed', error: serializeError(error), ...(retry ? { retry } : {}) };
  }
  if (snapshot.matches('stopped') || snapshot.matches('stopping')) {
    return {
      ...base,
      status: 'stopped',
      reason: (context.stopReason ?? 'aborted') as StopReason,
      ...(context.stopDetails !== null ? { stopDetails: context.stopDetails as JsonValue } : {}),
    };
  }
  if (snapshot.matches('drained')) return { ...base, status: 'stopped', reason: 'drained' };
  if (snapshot.matches('reconciling')) {
    return { ...base, status: 'stopped', reason: 'tool-reconciliation-required', unknownEffects: unknownEffectsOf(persisted()) };
  }
  const pending = pendingOf(persisted());
  return { ...base, status: 'suspended', pendingApprovals: pending.approvals, pendingClientCalls: pending.clientCalls };
}

/**
 * The result a leg hands its caller, whose transcript is the run's own (see
 * resultBase's `shared`): `messages` becomes a copy made when first read, so
 * a caller that never reads it does not pay for copying the whole transcript
 * (about 1.5 µs a message). The run's messages are never edited once made,
 * so a copy made later holds what one made now would.
 */
export function detachResult<R extends { messages: unknown[] }>(result: R): R {
  const shared = result.messages;
  let copy: R['messages'] | undefined;
  const settle = (value: R['messages']) => {
    copy = value;
    // A frozen or sealed result keeps the getter, which answers the same copy.
    if (Object.isExtensible(result)) Object.defineProperty(result, 'messages', { value, enumerable: true, writable: true, configurable: true });
  };
  Object.defineProperty(result, 'messages', {
    enumerable: true,
    configurable: true,
    get: () => {
      if (copy === undefined) settle(toJson<R['messages']>(shared));
      return copy;
    },
    set: settle,
  });
  return result;
}

/** The run's usage (in USD when every model that answered has a price) and its ledger's totals under its context. */
export async function accountingOf(
  base: Accounting,
  execution: ExecutionContext | null | undefined,
  usageByModel: Record<string, Parameters<typeof usdOf>[2]> | undefined,
): Promise<Accounting> {
  if (!execution) return base;
  let usd: number | null = 0;
  for (const [key, usage] of Object.entries(usageByModel ?? {})) {
    const price = usdOf(execution, parseModelKey(key), usage);
    usd = price === null || usd === null ? null : usd + price;
  }
  const totals = await execution.accounting();
  return {
    spent: { ...base.spent, usd: usd === null ? null : roundUsd(usd) },
    reserved: roundAmounts(totals.reserved),
    committed: roundAmounts(totals.committed),
    unknown: roundAmounts(totals.unknown),
  };
}

/**
 * What a terminal save stores beside the snapshot. A failed run whose cause
 * was transient is stored from its last checkpoint (`retryFailed` goes on
 * from there), with what failed; the chat's state is the run's as it is now.
 */
export function retryFromOf(context: RunSnapshot['context'], lastCommitted: PersistedRun | null): EnvelopeExtras['retryFrom'] {
  const error = context.error;
  if (!error?.retry || lastCommitted === null) return undefined;
  const snapshot = context.chat ? { ...lastCommitted, context: { ...lastCommitted.context, chat: context.chat } } : lastCommitted;
  return { snapshot, retry: { ...error.retry, error: serializeError({ name: error.name, code: error.code, message: error.message }) } };
}

/**
 * The result a save made on the way to the run's end carries: while it is
 * `ending` (it completed), `stopping` or `failing` (machines/run-chat.ts),
 * that save is the terminal commit, which stores the result. The transcript
 * is the snapshot's own, as in the host's terminal write.
 */
export function endingExtras<T>(
  snapshot: RunSnapshot, resultOf: (snapshot: RunSnapshot) => AgentResult<T>, lastCommitted: PersistedRun | null,
): EnvelopeExtras {
  if (!snapshot.matches('ending') && !snapshot.matches('stopping') && !snapshot.matches('failing')) return {};
  const json = toJson<AgentResult<unknown>>({ ...resultOf(snapshot), messages: [] });
  json.messages = snapshot.context.messages as unknown as AgentResult<unknown>['messages'];
  const retryFrom = snapshot.matches('failing') ? retryFromOf(snapshot.context, lastCommitted) : undefined;
  return { result: json, ...(retryFrom ? { retryFrom } : {}) };
}

/**
 * A run whose terminal commit was saved (what follows its end then saved its
 * outcome) keeps its result when that later save fails: the record holds the
 * result already, and reconcileAgentRun settles what the failed save left.
 */
export function afterFinalSave<T>(context: RunSnapshot['context'], result: AgentResult<T>, error: unknown): AgentResult<T> | null {
  if (!context.committedEnd) return null;
  const memory = typeof context.memory?.operationId === 'string';
  const rest = memory ? 'reconcileAgentRun settles the rest' : 'a terminal resume or reconcileAgentRun finishes the chat write';
  const warning = {
    type: 'warning' as const,
    setting: memory ? 'memory' : 'chat',
    message: `The save after the run's end failed (${serializeError(error).message}); its result stands, and ${rest}.`,
  };
  return { ...result, warnings: [...result.warnings, warning] };
}

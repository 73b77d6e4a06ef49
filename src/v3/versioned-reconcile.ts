/**
 * reconcileAgentRun({ checkpointVersion: 3, session, versionedMemory }):
 * settles the intents of a V3 run whose acknowledgment was lost. Each is read
 * back from the session's receipts by operation id, never applied again: a
 * receipt found acknowledges the intent; an extraction whose receipt is
 * missing commits again from its saved claim (the session replays it, or
 * applies it once); a tool write of a run that ended without its receipt
 * failed. Before anything is written, every receipt found must carry its
 * intent's request digest (else MemoryError `memory_receipt_mismatch`).
 */
import { MemoryError } from '../memory/errors.js';
import type { AgentRunEnvelope } from '../agent/types.js';
import type { VersionedIntentEvent } from '../../machines/memory-intent-versioned-types.js';
import type { AgentRunEnvelopeV3, AgentRunMemoryIntent } from './envelope.js';
import type { CheckedVersionedMemory } from './versioned-options.js';
import { isSettled, moveToolIntent } from './versioned-intents.js';
import { extractIntent } from './versioned-extract.js';
import { storedVersionedBinding } from './versioned-leg.js';

const ENDED = new Set(['completed', 'failed', 'stopped']);

export interface SettleInput {
  memory: CheckedVersionedMemory;
  /** The run as stored now. */
  load(): Promise<AgentRunEnvelope>;
  /** Saves the record as the next revision (under the call's lease) and answers what was saved. */
  save(envelope: AgentRunEnvelope): Promise<AgentRunEnvelope>;
}

const withIntent = (record: AgentRunEnvelopeV3, entry: AgentRunMemoryIntent): AgentRunEnvelopeV3 => ({
  ...record,
  memoryIntents: (record.memoryIntents ?? []).map((i) => (i.operationId === entry.operationId ? entry : i)),
});

/** Settles what can be settled; answers the operation ids it settled (acknowledged or failed), in the record's order. */
export async function settleVersionedIntents(input: SettleInput): Promise<string[]> {
  const session = input.memory.session;
  let record = (await input.load()) as unknown as AgentRunEnvelopeV3;
  const open = (record.memoryIntents ?? []).filter((i) => !isSettled(i));
  if (open.length === 0) return [];
  const ended = ENDED.has(record.status);
  // Every receipt is read first: one that another request made refuses the whole call, with nothing written.
  const receipts = new Map<string, Awaited<ReturnType<typeof session.receipt>>>();
  for (const intent of open) {
    const receipt = await session.receipt(intent.operationId);
    receipts.set(intent.operationId, receipt);
    if (receipt && typeof intent.requestDigest === 'string' && receipt.requestDigest !== intent.requestDigest) {
      throw new MemoryError('memory_receipt_mismatch',
        `The receipt of operation ${intent.operationId} carries request digest ${receipt.requestDigest}, not the intent's ${intent.requestDigest}; nothing was written.`);
    }
  }
  const settled: string[] = [];
  let failure: { error: unknown } | null = null;
  const save = async (entry: AgentRunMemoryIntent) => {
    try {
      record = (await input.save(withIntent(record, entry) as unknown as AgentRunEnvelope)) as unknown as AgentRunEnvelopeV3;
    } catch (error) {
      failure ??= { error };
      throw error;
    }
  };
  for (const intent of open) {
    if (intent.kind === 'extract') {
      await extractIntent({ memory: { session, extract: null }, runId: record.runId, record, stored: intent, binding: storedVersionedBinding(record), save });
    } else if (intent.kind === 'tool' && ended) {
      // A run that ended will not replay the call: its receipt says whether the write landed.
      const receipt = receipts.get(intent.operationId);
      const events: VersionedIntentEvent[] = receipt
        ? [...(intent.status === 'intended' ? [{ type: 'EXECUTED' as const, receipt }] : []), { type: 'COMPLETED' }]
        : [{ type: 'FAILED', error: { name: 'MemoryError', message: `The run ended and the session holds no receipt of operation ${intent.operationId}: the write never committed.` } }];
      await save(moveToolIntent(intent.operationId, intent, events));
    }
    // A save that failed (the lease lost, the store down) fails the call: what was saved stays.
    if (failure) throw (failure as { error: unknown }).error;
    const now = (record.memoryIntents ?? []).find((i) => i.operationId === intent.operationId);
    if (now && isSettled(now)) settled.push(intent.operationId);
  }
  return settled;
}

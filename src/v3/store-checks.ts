/**
 * What every V3 store checks, and the guard a V3 run calls on its store:
 * only version-3 envelopes of this kind go in, only version-3 records come
 * out, and a store that is not an AgentRunStoreV3 is refused with
 * UnsupportedStoreError before anything is read or written.
 */
import {
  CheckpointVersionError, InvalidOptionsError, RunIdentityError, UnsupportedStoreError,
} from '../errors/index.js';
import { isAgentRunStatus, summaryOf } from '../stores/list-query.js';
import type { AgentRunSummary } from '../stores/types.js';
import { ENVELOPE_VERSION_V3, type AgentRunEnvelopeV3 } from './envelope.js';
import { checkDigest } from './store-blob.js';
import type { AgentRunStoreV3 } from './store-types.js';

const KIND = 'cairn-agent-run';
/** The record versions a V3 store reads and writes. */
export const SUPPORTED_ENVELOPE_VERSIONS_V3 = [ENVELOPE_VERSION_V3] as const;

/** Whether `store` is an AgentRunStoreV3 (it says `checkpointVersion: 3` and has the V3 methods). */
export function isAgentRunStoreV3(store: unknown): store is AgentRunStoreV3 {
  const s = store as Partial<Record<keyof AgentRunStoreV3, unknown>> | null;
  return s !== null && typeof s === 'object' && s.checkpointVersion === 3
    && (['load', 'save', 'list', 'putBlob', 'getBlob', 'prune'] as const).every((m) => typeof s[m] === 'function');
}

/**
 * Refuses, with UnsupportedStoreError (code `unsupported_store`, feature
 * `agent-run-v3`), a store a `checkpointVersion: 3` run cannot use: a Redis
 * store (backend `redis`) or any store that is not an AgentRunStoreV3.
 */
export function assertAgentRunStoreV3(store: unknown): asserts store is AgentRunStoreV3 {
  if (isAgentRunStoreV3(store)) return;
  const backend = (store as { backend?: unknown } | null)?.backend;
  if (backend === 'redis') {
    throw new UnsupportedStoreError('redis', 'agent-run-v3',
      'The Redis store has no V3 run store: checkpointVersion 3 needs an AgentRunStoreV3 (in memory, SQLite or PostgreSQL).');
  }
  throw new UnsupportedStoreError(typeof backend === 'string' ? backend : 'agent-run-store', 'agent-run-v3',
    'checkpointVersion 3 needs session.store to be an AgentRunStoreV3 (createInMemoryAgentRunStoreV3, '
    + 'createSqliteAgentRunStoreV3, createPostgresAgentRunStoreV3); this store keeps version 1 and 2 records only.');
}

/** The checks a save makes before it reads or writes anything; returns the digests the record points to. */
export function checkSaveV3(envelope: AgentRunEnvelopeV3): string[] {
  if (envelope === null || typeof envelope !== 'object' || Array.isArray(envelope)) {
    throw new InvalidOptionsError('save: the envelope must be an object.', 'invalid_envelope');
  }
  if (envelope.kind !== KIND) throw new InvalidOptionsError(`save: not a run envelope (kind ${JSON.stringify(envelope.kind)}).`, 'invalid_envelope');
  // A V3 run is never written back as version 1 or 2, nor as a version this code does not know.
  if (envelope.version !== ENVELOPE_VERSION_V3) throw new CheckpointVersionError(envelope.version, SUPPORTED_ENVELOPE_VERSIONS_V3);
  if (typeof envelope.runId !== 'string' || envelope.runId === '') throw new InvalidOptionsError('save: runId must be a non-empty string.', 'invalid_envelope');
  if (typeof envelope.scope !== 'string') throw new InvalidOptionsError(`save: run ${envelope.runId} has no scope.`, 'invalid_envelope');
  if (!Number.isInteger(envelope.revision) || envelope.revision < 1) {
    throw new InvalidOptionsError(`save: run ${envelope.runId}: revision must be an integer of 1 or more.`, 'invalid_envelope');
  }
  if (!isAgentRunStatus(envelope.status)) throw new InvalidOptionsError(`save: run ${envelope.runId}: unknown status ${JSON.stringify(envelope.status)}.`, 'invalid_envelope');
  return referencedDigests(envelope);
}

/** The distinct package digests a record's context points to. */
export function referencedDigests(envelope: AgentRunEnvelopeV3): string[] {
  const context = envelope.context;
  if (context === undefined) return [];
  if (context === null || typeof context !== 'object' || !Array.isArray(context.steps)) {
    throw new InvalidOptionsError(`save: run ${envelope.runId}: context must be { steps: [...] }.`, 'invalid_envelope');
  }
  const digests = new Set<string>();
  for (const step of context.steps) {
    if (step === null || typeof step !== 'object' || !Number.isInteger(step.step) || typeof step.blob !== 'object' || step.blob === null
      || typeof step.manifest !== 'object' || step.manifest === null) {
      throw new InvalidOptionsError(`save: run ${envelope.runId}: each context step is { step, blob: { digest }, manifest }.`, 'invalid_envelope');
    }
    digests.add(step.blob.digest);
  }
  // Each distinct digest checked once: a long run's steps mostly repeat a few.
  for (const digest of digests) checkDigest(digest, 'save');
  return [...digests].sort();
}

/** A decoded record on its way out of a store: refused unless it is a V3 run record of the asked scope. */
export function checkLoadedV3(value: unknown, runId: string, scope: string | undefined): AgentRunEnvelopeV3 {
  const record = value as Partial<AgentRunEnvelopeV3> | null;
  if (record === null || typeof record !== 'object' || record.kind !== KIND || record.runId !== runId) {
    throw new InvalidOptionsError(`Stored record of run ${runId} is not a V3 run envelope.`, 'invalid_envelope');
  }
  if (record.version !== ENVELOPE_VERSION_V3) throw new CheckpointVersionError(record.version ?? null, SUPPORTED_ENVELOPE_VERSIONS_V3);
  if (scope !== undefined && record.scope !== scope) throw new RunIdentityError('scope_mismatch', runId);
  return record as AgentRunEnvelopeV3;
}

/** The summary a list answers, from an envelope and the store's times. */
export function summarizeV3(envelope: AgentRunEnvelopeV3, createdAt: number, updatedAt: number): AgentRunSummary {
  return summaryOf(envelope, createdAt, updatedAt);
}

/** Statuses prune may delete. */
export const TERMINAL_STATUSES = ['completed', 'failed', 'stopped'] as const;

export function checkTerminalBefore(options: { terminalBefore: number } | undefined): number {
  const terminalBefore = options?.terminalBefore;
  if (typeof terminalBefore !== 'number' || Number.isNaN(terminalBefore)) {
    throw new InvalidOptionsError('prune needs terminalBefore: a time in milliseconds.');
  }
  return terminalBefore;
}

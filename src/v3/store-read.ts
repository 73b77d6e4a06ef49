/**
 * How the readers (inspectRun, describeRun, checkStoredRuns, `cairn inspect`,
 * `cairn chart`, `cairn check`) read a V3 record: checked as a V3 record
 * first (kind, version 3, run id), then handed to the engine's envelope
 * checks as the version-2 envelope it extends, with its V3 fields riding
 * along. Only a reader does this: a version-1/2 resume refuses a V3 record.
 */
import type { AgentRunEnvelope } from '../agent/record-types.js';
import type { AgentRunEnvelopeV3 } from './envelope.js';
import { checkLoadedV3, isAgentRunStoreV3 } from './store-checks.js';

/** Whether a loaded value says it is a V3 run record. */
export function isV3Record(value: unknown): value is AgentRunEnvelopeV3 {
  return value !== null && typeof value === 'object' && (value as { kind?: unknown }).kind === 'cairn-agent-run'
    && (value as { version?: unknown }).version === 3;
}

/** A checked V3 record as the engine's checks read it (version 2, V3 fields kept). */
export function engineViewOfV3(record: AgentRunEnvelopeV3): AgentRunEnvelope {
  const checked = checkLoadedV3(record, record.runId, undefined);
  return { ...checked, version: 2 } as unknown as AgentRunEnvelope;
}

/**
 * What a reader reads of `loaded`: the engine's view of a V3 record when it
 * came from a V3 store (or `v3` says it may be one), otherwise the value as it is.
 */
export function readableRecord(store: unknown, loaded: unknown, v3 = false): unknown {
  if ((v3 || isAgentRunStoreV3(store)) && isV3Record(loaded)) return engineViewOfV3(loaded);
  return loaded;
}

/** What a description says of a V3 record's own fields. */
export interface DescribedV3 {
  /** The record version: 3. */
  version: 3;
  /** One entry per compiled package: its step, phase, digest and whether a forget redacted it. */
  contextSteps: { step: number; phase: string; digest: string; redacted: boolean }[];
  /** The distinct package digests the record points to. */
  packages: string[];
  workingMemoryRevision: number | null;
  memoryIntents: { operationId: string; status: string }[];
  /** Digests a forget redacted. */
  forgotten: string[];
}

export function describeV3Fields(record: AgentRunEnvelopeV3): DescribedV3 {
  const steps = record.context?.steps ?? [];
  return {
    version: 3,
    contextSteps: steps.map((s) => ({ step: s.step, phase: s.phase, digest: s.blob.digest, redacted: s.redacted === true })),
    packages: [...new Set(steps.map((s) => s.blob.digest))].sort(),
    workingMemoryRevision: record.workingMemory?.revision ?? null,
    memoryIntents: (record.memoryIntents ?? []).map((i) => ({ operationId: i.operationId, status: i.status })),
    forgotten: record.forgotten?.digests ?? [],
  };
}

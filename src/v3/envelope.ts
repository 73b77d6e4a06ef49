/**
 * The version-3 run record (`checkpointVersion: 3`): today's envelope with
 * `version: 3` and four optional fields, the compiled context, the working
 * memory, the versioned-memory intents and the redaction state. Only an
 * AgentRunStoreV3 keeps it; a version-1/2 reader refuses it as a checkpoint
 * version, identity or scope mismatch before anything runs.
 */
import type { AgentRunEnvelope } from '../agent/record-types.js';
import type { JsonValue } from '../agent/json.js';

/** The record version of a V3 run. */
export const ENVELOPE_VERSION_V3 = 3;

/** A plain JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** One compiled context package, as the step that sent it records it. */
export interface AgentRunContextStep {
  /** The model step the package was compiled for (0 for the first call). */
  step: number;
  /** The phase of the call: the tool loop, or a final answer call. */
  phase: 'loop' | 'finalize';
  /** The package's blob in the store: `sha256:<hex>` of its blocks' canonical JSON. */
  blob: { digest: string };
  /**
   * What the compiler says about the package (sources, sizes, placement,
   * refresh, ...; see docs/context.md). Plain JSON. A store that knows the
   * blob was redacted by a forget loads it with `redacted: true`.
   */
  manifest: JsonObject;
  /** Set by a load (never kept by a save) when a forget redacted the package's blob. */
  redacted?: boolean;
}

/** `AgentRunEnvelopeV3.context`: every package the run sent, in step order, and the compiler's state. */
export interface AgentRunContext {
  steps: AgentRunContextStep[];
  /** The compiler's `state()` at this save (a resume restores it, or refuses a compiler whose state differs). */
  compiler?: JsonValue;
}

/** `AgentRunEnvelopeV3.workingMemory`: the run's working-memory snapshot and how many patches made it. */
export interface AgentRunWorkingMemory {
  /** Moves by one with every patch applied (the `working-memory` stream event carries it). */
  revision: number;
  snapshot: JsonValue;
}

/**
 * One versioned-memory write of the run (written by the versioned-memory
 * protocol; reserved here so a V3 record can carry it). `operationId` is the
 * memory session's; further fields are the protocol's.
 */
export interface AgentRunMemoryIntent {
  operationId: string;
  status: 'intended' | 'planned' | 'committed' | 'acknowledged' | 'failed' | 'partial';
  [field: string]: JsonValue;
}

/**
 * `AgentRunEnvelopeV3.forgotten`: which of the run's context packages a
 * forget redacted (`redactForgotten`). The store fills it in on load from its
 * own tables; the engine never writes it and a save ignores it.
 */
export interface AgentRunForgotten {
  /** Digests of the run's packages whose blob is now redacted, sorted. */
  digests: string[];
}

/** The stored record of a V3 run. */
export interface AgentRunEnvelopeV3 extends Omit<AgentRunEnvelope, 'version'> {
  version: 3;
  /** The compiled context of each step; present for a run with `context`. */
  context?: AgentRunContext;
  /** The working memory; present for a run with `workingMemory`. */
  workingMemory?: AgentRunWorkingMemory;
  /** The versioned-memory writes; present for a run with `versionedMemory`. */
  memoryIntents?: AgentRunMemoryIntent[];
  /** The redaction state; present on load when a forget redacted one of the run's packages. */
  forgotten?: AgentRunForgotten;
}

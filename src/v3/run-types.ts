/**
 * The options and events of V3 runs (`checkpointVersion: 3`, docs/context.md):
 * the compiled context, the working memory, and the events only
 * `AgentStreamV3.eventsV3` carries. Types only; kept free of the store's and
 * the engine's modules so the options types can name them.
 */
import type { JsonValue } from '../agent/json.js';
import type { ContextCompiler, ContextCompilerOptions, ContextManifest } from '../context/types.js';
import type { VersionedMemoryRunOptions } from './versioned-options.js';

/** One note of the working memory. */
export interface WorkingMemoryNote {
  id: string;
  text: string;
}

/** The run's working memory: a goal and the notes the run (or its model) keeps. Plain JSON, kept in the record. */
export interface WorkingMemorySnapshot {
  scope: string;
  goal: string | null;
  /** When the snapshot was made (ms, from `create.now` or the run's clock). */
  createdAt: number;
  notes: WorkingMemoryNote[];
}

/** What a new working memory starts from. */
export interface WorkingMemoryCreate {
  scope: string;
  goal?: string;
  /** The creation time. @default the run's clock */
  now?: number;
  notes?: Array<string | WorkingMemoryNote>;
}

export interface WorkingMemoryOptions {
  /** The snapshot to start from (a new run only; a resume keeps the stored one). */
  snapshot?: WorkingMemorySnapshot;
  /** Makes the snapshot (a new run only). One of `snapshot` and `create`. */
  create?: WorkingMemoryCreate;
  /** Offer the model working_memory_read, working_memory_add and working_memory_update. @default false */
  tools?: boolean;
}

/** The V3 options of runAgent, streamAgent, resumeAgent and resumeStreamAgent. */
export interface AgentV3Options {
  /** The record version: 3 makes a V3 run (needs an AgentRunStoreV3 as `session.store`). @default today's records (1 or 2) */
  checkpointVersion?: 1 | 2 | 3;
  /** The context compiler, or its options (docs/context.md). Needs `checkpointVersion: 3`. */
  context?: ContextCompiler | ContextCompilerOptions;
  /** The run's working memory. Needs `checkpointVersion: 3`. */
  workingMemory?: WorkingMemoryOptions;
  /** A versioned memory session: its tools and the extraction of the completed run (docs/versioned-memory.md). Needs `checkpointVersion: 3`. */
  versionedMemory?: VersionedMemoryRunOptions;
}

/** What `eventsV3` carries besides every event of `events`. */
export type AgentEventV3Extra =
  /** A step's package was saved (before its model call): what the request carries. */
  | { type: 'context'; step: number; manifest: ContextManifest }
  /** A working-memory patch was applied; `revision` counts the patches. */
  | { type: 'working-memory'; revision: number }
  /** A versioned-memory intent's status was saved (`intended`, `planned`, `committed`, `acknowledged`, `failed`). */
  | { type: 'memory-intent'; operationId: string; status: string };

export type { JsonValue };

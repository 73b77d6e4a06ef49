/**
 * The V3 store contract: where `checkpointVersion: 3` runs and their
 * content-addressed context packages live (docs/v3.md). The in-memory,
 * SQLite and PostgreSQL V3 stores implement it; the Redis store does not.
 */
import type { JsonValue } from '../agent/json.js';
import type {
  AgentRunListPage, AgentRunListQuery, AgentRunLoadOptions, AgentRunSaveOptions,
} from '../stores/types.js';
import type { AgentRunEnvelopeV3 } from './envelope.js';

/** What a compiled context package holds: its blocks, plain JSON. The digest is taken over `blocks` alone. */
export interface ContextBlobContent {
  blocks: JsonValue[];
}

/** A memory record a package holds (by id and revision), so a forget can find the packages to redact. Never text. */
export interface ContextBlobRecordRef {
  recordId: string;
  revision: number;
}

/** A package to store: its digest, its content, and the memory records it holds. */
export interface ContextBlobInput {
  /** `sha256:<64 hex>` of the canonical JSON of `content.blocks` ({@link contextBlobDigest}). */
  digest: string;
  content: ContextBlobContent;
  /** The memory records the package's blocks hold. @default [] */
  records?: ContextBlobRecordRef[];
}

/** What `getBlob` answers. */
export type ContextBlobLookup =
  | { status: 'found'; content: ContextBlobContent }
  /** A forget redacted it: the content is gone, the digest stays known. */
  | { status: 'redacted' }
  | { status: 'missing' };

export interface AgentRunSaveOptionsV3 extends AgentRunSaveOptions {
  /**
   * Packages to store in the same commit as the envelope (the step's save
   * carries its package: no commit of its own). A package already stored is
   * not stored again. Each is checked against its digest first.
   */
  blobs?: ContextBlobInput[];
}

/** The forget event a versioned-memory session's `onForget` gives (the records forgotten, by id and revision). */
export interface ForgetEventV3 {
  records: ContextBlobRecordRef[];
}

/**
 * A store of V3 runs. Every method refuses bad input with a typed error and
 * writes nothing then.
 *
 * - `save` accepts only `version: 3` envelopes of kind `cairn-agent-run`
 *   (every save of a V3 run, terminal and bookkeeping ones included), and
 *   only at the stored revision plus one (else RevisionConflictError, code
 *   `revision_conflict`, subsystem `run`). Every digest the envelope's
 *   `context.steps` point to must be stored already or come in
 *   `options.blobs` (else ContextBlobError `blob_missing`). The record's
 *   `createdAt` and `updatedAt` are the store's: its clock at the first and
 *   the last save (the values a save carries are not kept).
 * - `load` answers the record as saved (with the store's times), `forgotten`
 *   and the manifests' `redacted: true` filled in when a forget redacted one
 *   of its packages; another scope is RunIdentityError `scope_mismatch`.
 * - Times come from the store's clock: the injected clock in memory and on
 *   SQLite, the database clock on PostgreSQL.
 */
export interface AgentRunStoreV3 {
  /** Marks a V3 store (see assertAgentRunStoreV3). */
  readonly checkpointVersion: 3;
  load(runId: string, options?: AgentRunLoadOptions): Promise<AgentRunEnvelopeV3 | undefined>;
  /** Resolves after the durable write of the envelope and its `options.blobs`, in one commit. */
  save(envelope: AgentRunEnvelopeV3, options?: AgentRunSaveOptionsV3): Promise<void>;
  /** Pages through stored V3 runs, newest update first (as AgentRunStore.list). */
  list(query?: AgentRunListQuery): Promise<AgentRunListPage>;
  /** Stores a package unless it is stored already; `stored` says whether this call wrote it. */
  putBlob(blob: ContextBlobInput): Promise<{ digest: string; stored: boolean }>;
  getBlob(digest: string): Promise<ContextBlobLookup>;
  /**
   * Deletes the terminal runs (completed, failed, stopped) last saved before
   * `terminalBefore` (ms, on the store's clock), then every blob no remaining
   * run points to; returns how many runs it deleted.
   */
  prune(options: { terminalBefore: number }): Promise<number>;
  /**
   * The versioned-memory `onForget` listener: redacts every stored package
   * that holds one of the forgotten record revisions (and any such package
   * stored later), and returns how many it redacted now. In the same
   * transaction, every copy of such a package's retrieval block in the runs
   * that point to it (history, checkpoint, result.messages) becomes a
   * stand-in that keeps its marker; the runs keep revision and updatedAt
   * (docs/forget.md). A later save of such a run is stored the same way.
   */
  redactForgotten(event: ForgetEventV3): Promise<number>;
  /** The store's clock now (ms): the time a save made now would carry. */
  now(): Promise<number>;
}

/**
 * Context, input, output, actors and events of the versioned memory-intent
 * chart (memory-intent-versioned.ts). Plain JSON: the persisted snapshot rides
 * in the run record's `memoryIntents[i].snapshot`.
 *
 * What src/ provides (machine id `versionedIntent`, `versionedIntentMachine.provide({ actors })`):
 *
 *   actor        input                                                   output
 *   claim        { operationId }                                         { messageIds: string[]; requestDigest: string }
 *   saveIntent   { operationId, entry: VersionedIntentEntry }            anything (ignored); throws when the run store is down
 *   commit       { operationId, messageIds: string[], requestDigest }    { receipt: VersionedIntentCommitReceipt; replayed: boolean }
 *   readReceipt  { operationId, requestDigest: string }                  VersionedIntentCommitReceipt | null (undefined is read as null)
 *
 * Only the `extract` kind invokes them. `claim` builds the extraction request
 * (the cited message ids and `session.requestDigest(request)`); `commit` is
 * `session.extract(request)` (a `VersionedMemoryCommitResult` fits its output);
 * `readReceipt` is `session.receipt(operationId)`. `saveIntent` writes `entry`
 * as the run record's intent of that operation id (and, if the host keeps
 * it, the actor's persisted snapshot next to it). Every actor may run again
 * after a restore: claim is deterministic, a commit of a committed operation
 * id is replayed, saves overwrite.
 *
 * Events (the `tool` kind only; the run sends each in the same save as the tool call's receipt):
 *   { type: 'EXECUTED', receipt: VersionedIntentCommitReceipt }   intended → committed (the executed receipt)
 *   { type: 'COMPLETED' }                                        committed → acknowledged (the completed receipt)
 *   { type: 'FAILED', error: VersionedIntentError }              intended | committed → failed
 */

/** `extract`: the run's extraction after it completed. `tool`: a memory_remember / revise / retract call of the model. */
export type VersionedIntentKind = 'extract' | 'tool';

/** The statuses an intent entry holds in the run record. */
export type VersionedIntentStatus = 'intended' | 'planned' | 'committed' | 'acknowledged' | 'failed';

/** An error as plain data; `code` only when the error had one. */
export type VersionedIntentError = { name: string; message: string; code?: string };

/** What the intent keeps of a memory commit's receipt (ids and numbers only, never text). */
export type VersionedIntentReceipt = { scopeRevision: number; committedAt: number };

/** The part of a memory commit's receipt the chart reads (a session's `VersionedMemoryReceipt` fits). */
export type VersionedIntentCommitReceipt = {
  requestDigest: string;
  planned: number;
  scopeRevision: number;
  committedAt: number;
};

/**
 * The intent entry the run stores in `memoryIntents` (the fields that are
 * null in the context are left out).
 */
export type VersionedIntentEntry = {
  operationId: string;
  kind: VersionedIntentKind;
  status: VersionedIntentStatus;
  /** The chat message ids the extraction cites (its claim). */
  messageIds?: string[];
  /** `sha256:<hex>` of the extraction request (the claim's; copied from the receipt on acknowledgment). */
  requestDigest?: string;
  /** How many mutations the commit applied (copied from the receipt). */
  planned?: number;
  receipt?: VersionedIntentReceipt;
  /** Why the intent did not settle (an acknowledgment clears it). */
  error?: VersionedIntentError;
};

export type VersionedIntentInput = {
  operationId: string;
  kind: VersionedIntentKind;
  /**
   * The intent as the run record holds it, to settle it (a reconciliation or
   * a resume). Left out: a fresh intent, which the run saved as `intended`.
   */
  stored?: VersionedIntentEntry;
};

export type VersionedIntentContext = {
  operationId: string;
  kind: VersionedIntentKind;
  /** The last status the chart knows to be durable in the run record. */
  status: VersionedIntentStatus;
  messageIds: string[] | null;
  requestDigest: string | null;
  planned: number | null;
  receipt: VersionedIntentReceipt | null;
  error: VersionedIntentError | null;
};

/** The output: the entry of the final state (see `intentEntryOf`). */
export type VersionedIntentOutput = VersionedIntentEntry;

export type ClaimInput = { operationId: string };
export type ClaimOutput = { messageIds: string[]; requestDigest: string };
export type SaveIntentInput = { operationId: string; entry: VersionedIntentEntry };
export type CommitInput = { operationId: string; messageIds: string[]; requestDigest: string };
export type CommitOutput = { receipt: VersionedIntentCommitReceipt; replayed: boolean };
export type ReadReceiptInput = { operationId: string; requestDigest: string };
export type ReadReceiptOutput = VersionedIntentCommitReceipt | null | undefined;

export type VersionedIntentEvent =
  | { type: 'EXECUTED'; receipt: VersionedIntentCommitReceipt }
  | { type: 'COMPLETED' }
  | { type: 'FAILED'; error: VersionedIntentError };

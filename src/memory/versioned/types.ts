/**
 * The versioned memory contract (cairn/memory/versioned, docs/versioned-memory.md):
 * records revisioned per scope, written only by atomic commits that leave a
 * receipt under an operation id, so a commit replayed after a crash is read
 * back instead of applied again; and forget, which takes a record's text out
 * of every revision and says which revisions went (ids and numbers, never text).
 *
 * Types only. The stores (in memory, SQLite, PostgreSQL) implement
 * {@link VersionedMemoryStore}; `createMemorySession` builds a
 * {@link MemorySession} on one of them.
 */
import type { MemoryScope } from '../types.js';
import type { AgentTool } from '../../agent/tool-types.js';
import type { ContextSource } from '../../context/types.js';

export type { MemoryScope };

/** Where a record's fact came from: a message of a chat or a run. */
export interface VersionedMemorySource {
  /** The chat message id: `<runId>:<index>` for a run's own message, or a stored chat's own id for an input message. */
  messageId: string;
}

/**
 * One revision of a record. Reads answer the latest revision of each record;
 * `history` answers every one. A revision a forget reached keeps its ids and
 * numbers and loses its text (`text: null`, `status: 'forgotten'`).
 */
export interface VersionedMemoryRecord {
  id: string;
  /** The exact scope the record lives in (a versioned store compares scopes exactly, it does not narrow). */
  scope: MemoryScope;
  /** The fact; null once forgotten. */
  text: string | null;
  /** The scope revision of the commit that wrote this revision (unique within the scope, grows by one a commit). */
  revision: number;
  /** `explicit`: a person or a tool call said it. `inferred`: an extraction read it from messages. */
  origin: 'explicit' | 'inferred';
  sources: VersionedMemorySource[];
  /** `active`, `retracted` (kept, not recalled, cannot be revised), `forgotten` (text gone). */
  status: 'active' | 'retracted' | 'forgotten';
  /** The operation that wrote this revision. */
  operationId: string;
  /** ms on the writer's clock: when the record's first revision was written, and this one. */
  createdAt: number;
  updatedAt: number;
}

/** One change of a commit. A commit applies all of its mutations or none. */
export type VersionedMemoryMutation =
  | { op: 'add'; id: string; text: string; origin: 'explicit' | 'inferred'; sources?: VersionedMemorySource[] }
  /** A new text for an active record (a retracted one is refused with `memory_record_retracted`). */
  | { op: 'revise'; id: string; text: string; sources?: VersionedMemorySource[] }
  /** Retires an active record: it stays (with its history), is not recalled, and cannot be revised. */
  | { op: 'retract'; id: string };

/**
 * What a commit left behind, stored under its operation id in the same
 * transaction as its mutations. It holds ids and numbers, never text, so a
 * forget leaves nothing to find in it.
 */
export interface VersionedMemoryReceipt {
  operationId: string;
  scope: MemoryScope;
  /** `sha256:<hex>` of the request the commit was made for (the caller's; a replay must bring the same). */
  requestDigest: string;
  /** How many mutations the commit applied. */
  planned: number;
  /** The scope's revision after the commit (the revision of every record revision it wrote). */
  scopeRevision: number;
  /** ms on the writer's clock (the commit's `at`). */
  committedAt: number;
  /** What each mutation wrote, in order. */
  records: { id: string; revision: number; op: VersionedMemoryMutation['op'] }[];
}

export interface VersionedMemoryCommitInput {
  scope: MemoryScope;
  operationId: string;
  requestDigest: string;
  mutations: VersionedMemoryMutation[];
  /** The commit's time on the writer's clock. */
  at: number;
}

export interface VersionedMemoryCommitResult {
  receipt: VersionedMemoryReceipt;
  /** True when a receipt of this operation id was stored already: nothing was applied, the stored receipt is answered. */
  replayed: boolean;
}

/** What a forget took: every revision of the record, by id and number. */
export interface VersionedMemoryForgetEvent {
  scope: MemoryScope;
  /** The forgotten revisions (the shape a V3 run store's `redactForgotten` takes). */
  records: { recordId: string; revision: number }[];
  forgottenAt: number;
}

export interface VersionedMemorySearchHit {
  record: VersionedMemoryRecord;
  /** Higher is closer (0 < score <= 1: the share of the query's words the text holds). */
  score: number;
}

/**
 * A versioned memory store. Every call checks its scope (`memory_scope_invalid`)
 * and its input (`memory_record_invalid`) first; a refused call writes nothing.
 * Returned values are copies.
 */
export interface VersionedMemoryStore {
  /**
   * Applies every mutation and stores the receipt, in one transaction, or
   * nothing. An operation id with a stored receipt is not applied again: the
   * stored receipt is answered (`replayed: true`), or, when `requestDigest`
   * differs from the stored one, `memory_receipt_mismatch` is thrown.
   * Errors: `memory_record_not_found` (revise/retract of an id the scope does
   * not hold), `memory_record_retracted` (revise or retract of a retracted
   * record), `memory_record_forgotten`, `memory_record_exists` (an add of an id
   * the scope holds).
   */
  commit(input: VersionedMemoryCommitInput): Promise<VersionedMemoryCommitResult>;
  /** The receipt of an operation, if it committed. */
  receipt(input: { scope: MemoryScope; operationId: string }): Promise<VersionedMemoryReceipt | undefined>;
  /** A record's latest revision. */
  get(input: { scope: MemoryScope; id: string }): Promise<VersionedMemoryRecord | undefined>;
  /** Every revision of a record, oldest first ([] when the scope does not hold it). */
  history(input: { scope: MemoryScope; id: string }): Promise<VersionedMemoryRecord[]>;
  /** The latest revision of each record, oldest record first; retracted and forgotten ones only when asked. */
  list(input: { scope: MemoryScope; includeRetracted?: boolean; includeForgotten?: boolean; limit?: number }): Promise<VersionedMemoryRecord[]>;
  /** Active records closest to a text, best first (ties: newest revision first). @default limit 10 */
  search(input: { scope: MemoryScope; text: string; limit?: number }): Promise<VersionedMemorySearchHit[]>;
  /** The scope's revision now (0 before its first commit). */
  scopeRevision(input: { scope: MemoryScope }): Promise<number>;
  /**
   * Takes the text out of every revision of a record (and out of anything
   * else the store kept of it), keeps a forget record of its id and
   * revisions, and answers them. A forgotten record stays forgotten; a second
   * forget answers the same revisions. `memory_record_not_found` when the
   * scope does not hold the id; `memory_revision_unknown` when `revision` is
   * given and the record has no such revision.
   */
  forget(input: { scope: MemoryScope; id: string; revision?: number; at: number }): Promise<VersionedMemoryForgetEvent>;
  /** The forget records of a scope: ids and revisions, never text. */
  forgotten(input: { scope: MemoryScope }): Promise<{ recordId: string; revision: number; forgottenAt: number }[]>;
}

/** One message an extraction reads, under the id the chat projection gives it. */
export interface MemoryExtractionMessage {
  id: string;
  role: 'user' | 'assistant';
  text: string;
}

/** What a run asks the session to extract: its claim (the messages it cites, by id), under the run's operation id. */
export interface MemoryExtractionRequest {
  operationId: string;
  runId: string;
  messages: MemoryExtractionMessage[];
}

/** The answer of the memory LLM, parsed: facts, each citing messages by label (`s0` is the request's first message). */
export interface MemoryLlmAnswer {
  facts: { text: string; sources: string[] }[];
}

/** The memory LLM: asked with a prompt (and the labelled messages), answers JSON text `{ "facts": [{ "text", "sources": ["s0"] }] }`. */
export type MemoryLlm = (input: { prompt: string; messages: (MemoryExtractionMessage & { label: string })[]; signal?: AbortSignal }) => Promise<string>;

export interface MemorySessionOptions {
  store: VersionedMemoryStore;
  scope: MemoryScope;
  /** The memory LLM an extraction asks. Needed by `extract`. */
  llm?: MemoryLlm;
  /** Called after every forget, with what it took (a V3 run store's `redactForgotten` is the usual listener). */
  onForget?: (event: VersionedMemoryForgetEvent) => Promise<void> | void;
  /** A store of chats (cairn/chat), so `resolveSource` can answer the chat message a source cites. */
  chats?: unknown;
  /** Ids of new records. @default a random id */
  generateId?: () => string;
  clock?: { now(): number };
}

/** What `resolveSource` answers. */
export type MemorySourceResolution =
  | { status: 'found'; messageId: string; runId?: string; index?: number; chatId?: string; message?: unknown }
  | { status: 'missing'; messageId: string };

/** The context of a tool call the session's tools need (the run's id and the call's identity). */
export interface MemoryToolCallIdentity {
  runId: string;
  modelStep: number;
  toolCallId: string;
}

/**
 * A versioned memory session: one scope of one store, with the calls a
 * person, a tool and a run's extraction make. Every write is one commit
 * under an operation id; a write under an operation id that committed
 * answers its stored receipt and applies nothing.
 */
export interface MemorySession {
  readonly store: VersionedMemoryStore;
  readonly scope: MemoryScope;
  /** The operation id of a run's extraction, or of a tool call of a run. Deterministic: the same input, the same id. */
  operationId(of: { runId: string; kind: 'extract' } | ({ kind: 'tool' } & MemoryToolCallIdentity)): string;
  recall(input: { text: string; limit?: number }): Promise<VersionedMemorySearchHit[]>;
  remember(input: { text: string; sources?: VersionedMemorySource[]; operationId?: string }): Promise<VersionedMemoryCommitResult>;
  revise(input: { id: string; text: string; operationId?: string }): Promise<VersionedMemoryCommitResult>;
  retract(input: { id: string; operationId?: string }): Promise<VersionedMemoryCommitResult>;
  /** Forgets a record (every revision, or the one named), then calls `onForget` with the event. */
  forget(input: { id: string; revision?: number }): Promise<VersionedMemoryForgetEvent>;
  /**
   * Finds the message a source cites: in the chat `options.chatId` (default: the scope's `chatId`) of the
   * session's chat store when it has one and a chat id is known, else by the id's `<runId>:<index>` form.
   */
  resolveSource(source: VersionedMemorySource, options?: { chatId?: string }): Promise<MemorySourceResolution>;
  /** The digest of an extraction request: what its intent saves and its receipt must carry. */
  requestDigest(request: MemoryExtractionRequest): string;
  /**
   * Prepares the extraction's plan (the memory LLM) and commits it with its
   * receipt in one call. A request whose operation id committed answers the
   * stored receipt without asking the LLM (`replayed: true`); a stored
   * receipt of another request digest is `memory_receipt_mismatch`. A fact
   * citing a label the request does not have is `memory_source_unknown`;
   * nothing is written then.
   */
  extract(request: MemoryExtractionRequest, options?: { signal?: AbortSignal }): Promise<VersionedMemoryCommitResult>;
  /** The stored receipt of an operation, read back (how a lost acknowledgment is recovered). */
  receipt(operationId: string): Promise<VersionedMemoryReceipt | undefined>;
  /**
   * memory_remember, memory_recall, memory_revise, memory_retract. Each write
   * commits under `operationId({ kind: 'tool', ...identity })` of its call,
   * so a call run again after a crash answers its first receipt. A write
   * whose commit throws but whose receipt the store holds (the commit landed,
   * its answer was lost) answers that receipt (`replayed: true`) instead of
   * failing, so the model is never told a landed write failed.
   * `run.runId` is the run's id (the call's step and id come from the tool
   * context); `run.onReceipt`, when given, is called with each write's receipt.
   */
  tools(run: { runId: string; onReceipt?: (receipt: VersionedMemoryReceipt) => void }): Record<'memory_remember' | 'memory_recall' | 'memory_revise' | 'memory_retract', AgentTool>;
  /** A context source (cairn/context) recalling this session's records, with their ids and revisions, so a forget finds the packages. */
  contextSource(options?: { name?: string; limit?: number }): ContextSource;
}

/** The names of the session's tools that write (their intents move with their receipts). */
export const MEMORY_WRITE_TOOLS = ['memory_remember', 'memory_revise', 'memory_retract'] as const;
export const MEMORY_TOOLS = ['memory_remember', 'memory_recall', 'memory_revise', 'memory_retract'] as const;

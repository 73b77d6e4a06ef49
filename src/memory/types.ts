/**
 * The memory store's contract: what a record is, what a scope is, and the
 * handful of calls every backend (in memory, SQLite, PostgreSQL, yours)
 * answers the same way. The conformance suite in cairn/testing checks it.
 */

/**
 * Whose memories: one or more of a user, an agent and a chat. A record is
 * written under an exact scope; a read with a scope sees every record whose
 * scope holds all of the read's fields (`{ userId: 'ada' }` sees Ada's
 * records of every agent and chat, `{ userId: 'ada', agentId: 'support' }`
 * only those of the support agent). Any other key is refused with
 * `memory_scope_invalid`.
 */
export interface MemoryScope {
  userId?: string;
  agentId?: string;
  chatId?: string;
}

/** The ids a run writes into every record its extraction adds or updates. */
export interface MemoryCairnMetadata {
  runId: string;
  operationId: string;
}

/** Plain JSON. `cairn`, when present, is {@link MemoryCairnMetadata}. */
export type MemoryMetadata = { cairn?: MemoryCairnMetadata } & Record<string, unknown>;

/** A vector from an embedder, with the embedder's model when known (a mismatch is reported, never mixed). */
export interface MemoryEmbedding {
  vector: number[];
  model?: string;
}

export interface MemoryRecord {
  id: string;
  text: string;
  /** sha256 (hex) of the text with its whitespace collapsed and trimmed: two records of one scope never share it. */
  hash: string;
  /** The exact scope the record was written under. */
  scope: MemoryScope;
  metadata: MemoryMetadata;
  embedding?: MemoryEmbedding;
  /** When the record stops being recalled, and when `sweep` may delete it (ms, on the caller's clock). */
  expiresAt?: number;
  createdAt: number;
  updatedAt: number;
}

export interface MemoryAddInput {
  /** The new record's id (the caller's `generateId`). Ignored when the text is already stored in the scope. */
  id: string;
  scope: MemoryScope;
  text: string;
  /** @default {} */
  metadata?: MemoryMetadata;
  embedding?: MemoryEmbedding;
  expiresAt?: number;
  /** The write's time on the caller's clock: `createdAt` of a new record, `updatedAt` of every record written. */
  at: number;
}

export interface MemoryUpdateInput {
  id: string;
  /** The record must be in this scope (see {@link MemoryScope}); otherwise the update finds nothing. */
  scope: MemoryScope;
  text: string;
  /** Replaces the record's metadata. @default the record's own */
  metadata?: MemoryMetadata;
  /** Replaces the record's embedding; without it a record whose text changed loses its old one. */
  embedding?: MemoryEmbedding;
  expiresAt?: number;
  at: number;
}

/**
 * What a write did. `deduplicated`: the text was already stored in the
 * scope, so no second record was made: an add refreshed that record (its
 * metadata, embedding and `updatedAt`); an update to another record's text
 * folded the updated record into that one (the updated id is deleted).
 */
export interface MemoryWriteResult {
  record: MemoryRecord;
  deduplicated: boolean;
}

export interface MemoryListInput {
  scope: MemoryScope;
  /** Only the records whose `metadata.cairn.operationId` is this (what an extraction wrote). */
  operationId?: string;
  /** @default all */
  limit?: number;
}

export interface MemorySearchInput {
  scope: MemoryScope;
  /** The text to match (a run's last user message). */
  query: string;
  /**
   * The query's embedding. With it, records are ranked by cosine similarity;
   * a record without an embedding of the same length (and model, when both
   * name one) is left out and counted in `embeddingMismatches`. Without it,
   * records are ranked by the share of the query's words they contain.
   */
  embedding?: MemoryEmbedding;
  /** @default 10 */
  limit?: number;
  /** Leaves out records whose `expiresAt` is at or before this time. */
  now?: number;
}

export interface MemorySearchHit {
  record: MemoryRecord;
  /** Higher is closer: cosine similarity with an embedding, the share of query words found without one (0 < score <= 1). */
  score: number;
}

export interface MemorySearchResult {
  hits: MemorySearchHit[];
  /** Records of the scope an embedding search could not compare (no embedding, or one of another length or model). */
  embeddingMismatches: number;
}

/**
 * A memory store. Every call checks its scope first (`memory_scope_invalid`)
 * and its input (`memory_record_invalid`) before it reads or writes. Returned
 * records are copies: changing one changes nothing stored.
 */
export interface MemoryStore {
  /** Adds a fact, or refreshes the record that already holds the same text in the same scope (dedup by content hash). */
  add(input: MemoryAddInput): Promise<MemoryWriteResult>;
  /** Rewrites a record's text; `undefined` when no record of that id is in the scope. */
  update(input: MemoryUpdateInput): Promise<MemoryWriteResult | undefined>;
  /** Deletes a record; false when no record of that id is in the scope. */
  delete(input: { id: string; scope: MemoryScope }): Promise<boolean>;
  /** One record, if it is in the scope. */
  get(input: { id: string; scope: MemoryScope }): Promise<MemoryRecord | undefined>;
  /** The scope's records, oldest first (by `createdAt`, then id). */
  list(input: MemoryListInput): Promise<MemoryRecord[]>;
  /** The scope's records closest to a query, best first (ties: newest `updatedAt`, then id). */
  search(input: MemorySearchInput): Promise<MemorySearchResult>;
  /** Deletes the scope's records whose `expiresAt` is at or before `now`; returns how many. */
  sweep(input: { scope: MemoryScope; now: number }): Promise<number>;
}

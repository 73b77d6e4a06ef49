/**
 * The `memory` option of a run and what a run records of it. The store
 * contract itself is in types.ts.
 */
import type { ExecutionContext } from '../policy/index.js';
import type { MemoryEmbedding, MemoryScope, MemoryStore } from './types.js';

/** Tokens a memory LLM or embedder call reports; without them the call is held as unknown in the ledger. */
export interface MemoryCallUsage {
  inputTokens: number;
  outputTokens?: number;
}

/** What the memory LLM is asked: a system prompt (its task) and the user text (the material). */
export interface MemoryLlmInput {
  system: string;
  user: string;
  /** Aborted with the run's abort signal. */
  signal?: AbortSignal;
}

/** The memory LLM's answer: its text (JSON), alone or with the usage of the call. */
export type MemoryLlmAnswer = string | { text: string; usage?: MemoryCallUsage };

/** An embedder's answer: the vector (and its model), with the usage of the call when known. */
export interface MemoryEmbedderAnswer extends MemoryEmbedding {
  usage?: MemoryCallUsage;
}

export interface MemorySeams {
  store: MemoryStore;
  /** The memory LLM: a real application wraps a model call here. */
  llm: (input: MemoryLlmInput) => Promise<MemoryLlmAnswer> | MemoryLlmAnswer;
  /** Times of memory writes and expiry (`now`); `setTimeout` is the clock's timer. */
  clock: { now(): number; setTimeout(fn: () => void, ms: number): () => void };
  /** Ids of new memory records. */
  generateId: () => string;
  /** Embeds a text: recall queries and extracted facts get vectors, and search ranks by them. @default none: search by words */
  embedder?: (input: { text: string; signal?: AbortSignal }) => Promise<MemoryEmbedderAnswer> | MemoryEmbedderAnswer;
  /** The context the memory LLM and embedder calls are charged to. @default the run's `execution` */
  execution?: ExecutionContext;
  /** Where a reconciliation reports its warnings besides its answer. @default none */
  logger?: { warn(message: string): void };
}

export interface AgentMemoryOptions {
  seams: MemorySeams;
  /** Whose memories the run recalls and writes (`{ userId: 'ada' }`). Part of the binding. */
  scope: MemoryScope;
  /** Recall before the first model call: `false` turns it off; `limit` caps the memories recalled. @default { limit: 5 } */
  recall?: boolean | { limit?: number };
  /** Extract the completed run's facts into memory. @default true */
  extract?: boolean;
  /** `manual`: the run writes nothing to memory (your code does); `session-end`: it extracts once it completed. @default 'session-end' */
  writePolicy?: 'manual' | 'session-end';
  /** `on-extract`: after an extraction, expired records of the scope are deleted. @default none */
  sweep?: 'on-extract';
}

/** What the recall before the first model call did (`AgentRunMemory.recall`). */
export interface AgentRunMemoryRecall {
  /** `recalled`: the store answered (maybe with nothing); `skipped`: recall was off or the history already held one; `failed`: the store or embedder threw. */
  status: 'recalled' | 'skipped' | 'failed';
  /** Memories that entered the history (in one system message). */
  count: number;
  /** Records an embedding search could not compare (see `embedding-mismatch`). */
  embeddingMismatches?: number;
  error?: { name: string; code: string; message: string };
}

/** `AgentRunMemory.extraction`: where the extraction of a completed run stands. */
export interface AgentRunMemoryExtraction {
  operationId: string;
  /**
   * `pending` from the terminal commit until the memory LLM's plan is saved,
   * `planned` once its size is durable (writes may be under way), then
   * `completed` or `failed` (a partial pass is failed with code
   * `memory_extraction_partial`; a V3 record says `partial` for it, with
   * the warning in its result).
   */
  status: 'pending' | 'planned' | 'completed' | 'failed' | 'partial';
  /** Mutations the extraction planned (deletions and writes), saved before any write. */
  planned?: number;
  /** Mutations applied (or confirmed by a reconciliation). */
  mutations?: number;
  error?: { name: string; code: string; message: string };
}

/** `AgentRunEnvelope.memory`: the run's memory scope, its recall and its extraction. */
export interface AgentRunMemory {
  scope: MemoryScope;
  recall?: AgentRunMemoryRecall;
  extraction?: AgentRunMemoryExtraction;
}

/** A warning part of the run's stream (the same shape as AgentWarning). */
export interface MemoryWarning {
  type: 'warning';
  setting: string;
  message: string;
  /** What the warning is about: `embedding-mismatch`, `unaccounted-usage`, `memory_extraction_partial`, ... */
  code?: string;
}

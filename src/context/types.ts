/**
 * The context compiler's contract (cairn/context): sources that retrieve
 * records for a step, the package of blocks a step's request carries, the
 * manifest that says what the model saw, and the estimator that counts it.
 * Everything here is plain data, so a package can be stored as a
 * content-addressed blob and a manifest can sit in the run record.
 */
import type { JsonValue } from '../agent/json.js';
import type { LanguageModel, ModelMessage, Usage } from '../models/types.js';

/** One record a source found for a step. */
export interface ContextHit {
  /** The record's text, as the model will read it. */
  text: string;
  /** The record's position in the source's own answer (or corpus). */
  index: number;
  /** Relevance; higher first. Records are dropped lowest score first when the window is short. */
  score?: number;
  /** A stable record id (a memory record's id, a document id). @default `<source>:<index>` */
  id?: string;
  /** The record's revision, when the source versions its records (a forget names revisions). */
  revision?: number;
}

/** What a source is asked with: the step's real model, tools and history. */
export interface ContextSourceInput {
  /** The step about to be called. */
  step: number;
  phase: 'loop' | 'finalize';
  /** The text of the last user message of the history (empty when there is none). */
  query: string;
  /** The history as the step sends it (after prepareStep). */
  messages: readonly ModelMessage[];
  model: { provider: string; modelId: string };
  /** The names of the tools the step offers. */
  tools: readonly string[];
  signal: AbortSignal;
}

/** A source of context records: retrieval over documents, memory, anything. */
export interface ContextSource {
  /** Names the source in manifests and warnings; unique within a compiler. */
  readonly name: string;
  retrieve(input: ContextSourceInput): Promise<readonly ContextHit[]> | readonly ContextHit[];
}

/** A record as a block holds it. */
export interface ContextBlockRecord {
  id: string;
  index: number;
  text: string;
  score?: number;
  revision?: number;
}

/** One block of a package: a source's records, or the working memory. */
export interface ContextBlock {
  kind: 'retrieval' | 'working-memory';
  /** The source's name (`working-memory` for the working memory). */
  source: string;
  records: ContextBlockRecord[];
}

/** A warning the compile made: a source that threw or answered with something that is not text, a record dropped. */
export interface ContextWarning {
  source: string;
  message: string;
}

/** What a step's request carried, and why: stored in the run record beside the package's digest. */
export interface ContextManifest {
  /** The version of this manifest's shape. */
  version: 1;
  step: number;
  phase: 'loop' | 'finalize';
  /**
   * Why the package was compiled: `initial` (the run's first package), `step`
   * (a later step, sources asked again), `redacted` (compiled again because a
   * forget redacted the stored one).
   */
  refresh: 'initial' | 'step' | 'redacted';
  /** The compile pass of the run this package came from; its retrieval block is marked with it. */
  pass: number;
  /** `sha256:` of the package's blocks (their canonical JSON): the blob the record points to. */
  digest: string;
  /** `sha256:` of the history the package was compiled for: a reopened step with the same one reuses the package. */
  messagesDigest: string;
  model: { provider: string; modelId: string };
  tools: string[];
  blocks: Array<{ kind: ContextBlock['kind']; source: string; records: number; tokens: number }>;
  placement: {
    /** The retrieval block joins the history after the call succeeded (false when it is the one already there). */
    retrieval: 'appended' | 'unchanged' | 'none';
    /** The working memory is the request's last message. */
    workingMemory: 'tail' | 'none';
    /** The model binds preserved thinking to the transcript prefix: this step's tail joins the history. */
    tailKept: boolean;
  };
  tokens: {
    /** The estimate of the whole request's messages (history + package). */
    estimated: number;
    /** The window the compile fitted the request into, when one is known. */
    window: number | null;
    /** Of the estimate, the package's blocks. */
    package: number;
  };
  /** Records left out to fit the window (lowest score first). */
  overflow?: { dropped: number; droppedIds: string[] };
  warnings?: ContextWarning[];
  /** The package's stored blob was redacted by a forget. */
  redacted?: boolean;
  /** The request's prefix differs from what the previous step sent (a block was removed from the history). */
  cachePrefixChanged?: boolean;
}

/** A step's compiled context. */
export interface ContextPackage {
  blocks: ContextBlock[];
  manifest: ContextManifest;
}

/** What a call's usage tells the estimator. */
export interface EstimatorSample {
  /** What the estimator said the request's messages would take. */
  estimatedTokens: number;
  inputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

/** Counts tokens before a call; calibrated with each call's usage after it. */
export interface ContextEstimator {
  estimate(text: string): number;
  calibrate?(sample: EstimatorSample): void;
}

/** The input of one compile: the step's real model, tools and history. */
export interface CompileInput {
  step: number;
  phase: 'loop' | 'finalize';
  model: LanguageModel;
  tools: readonly string[];
  messages: readonly ModelMessage[];
  /** The working memory's text, when the run keeps one. */
  workingMemory?: string;
  signal: AbortSignal;
}

/** The state a compiler carries from step to step; saved in the run record, restored on resume. */
export interface ContextCompilerState {
  version: 1;
  /** Compiles made so far. */
  passes: number;
  /** The digest of the retrieval blocks that last joined the history (the same ones are not appended again). */
  lastRetrieval: string | null;
  /** The estimator's calibration: actual input tokens per estimated token. */
  ratio: number;
}

export interface ContextCompiler {
  readonly kind: 'cairn-context-compiler';
  compile(input: CompileInput): Promise<ContextPackage>;
  /** The package's blocks became part of a call that succeeded: the compiler moves on. */
  commit(pkg: ContextPackage): void;
  /** Feeds a call's usage to the estimator. */
  calibrate(estimatedTokens: number, usage: Usage): void;
  state(): ContextCompilerState;
  restore(state: ContextCompilerState): void;
  readonly estimator: ContextEstimator;
}

export interface ContextCompilerOptions {
  sources?: ContextSource[];
  /** Counts tokens; calibrated with each call's input, cache-read and cache-write tokens. @default about 4 characters a token */
  estimator?: ContextEstimator;
  /**
   * The model's input window in tokens (a number, or by model). The compile
   * drops retrieval records, lowest score first, until the request fits; a
   * history that does not fit by itself fails the step with
   * ContextOverflowError. @default no window: nothing is dropped
   */
  window?: number | ((model: { provider: string; modelId: string }) => number | undefined);
  /** Tokens kept free for the answer within the window. @default 0 */
  reserveOutputTokens?: number;
  /** Most records one source contributes. @default 8 */
  maxRecordsPerSource?: number;
  /**
   * Whether the model binds preserved thinking to the transcript prefix, so
   * the working-memory tail must join the history. @default Claude 5.x models
   */
  keepsTail?: (model: { provider: string; modelId: string }) => boolean;
}

export type JsonState = JsonValue;

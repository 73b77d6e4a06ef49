/**
 * Public types of `cairn/headless`: the options of a headless leg, the report
 * it returns, project instructions, skills and the doctor.
 */
import type {
  AgentDeps, AgentEvent, AgentOptions, AgentRunStore, AgentTools, ApprovalResponse, ClientToolResult, JsonValue, LeaseOptions,
  Message, ReconciledToolResult, StopReason,
} from '../agent/types.js';
import type { SerializedError } from '../errors/index.js';
import type { Usage } from '../models/types.js';

// ---------------------------------------------------------------- pricing

/**
 * USD per million tokens. Cached input tokens are part of `Usage.inputTokens`;
 * they are charged at their own price and the rest of the input at
 * `inputPerMTok`. Reasoning tokens are part of the output and cost
 * `outputPerMTok`.
 */
export interface ModelPrice {
  inputPerMTok: number;
  outputPerMTok: number;
  /** Input tokens read from the provider's prompt cache. @default inputPerMTok */
  cacheReadPerMTok?: number;
  /** Input tokens written to the prompt cache (Anthropic charges extra for them). @default inputPerMTok */
  cacheWritePerMTok?: number;
}

export interface PriceQuery {
  provider: string;
  modelId: string;
  usage: Usage;
}

/**
 * Prices a model's usage in USD. Return `null` or `undefined` when the model has
 * no price: the report's cost is then incomplete. It may be async.
 */
export type PriceProvider = (query: PriceQuery) => number | null | undefined | Promise<number | null | undefined>;

// ---------------------------------------------------------------- breaker

/** The circuit breaker's state and store now live in the model layer (cairn/models); headless passes `deps.breakerStore` on. */
export type { BreakerState, BreakerStore } from '../models/breaker-store.js';
import type { BreakerStore } from '../models/breaker-store.js';

export interface HeadlessDeps extends AgentDeps {
  /** Prices each call. @default the bundled price table */
  priceProvider?: PriceProvider;
  /** A circuit breaker shared by workers: after `threshold` transient failures in a row, calls fail fast for `cooldownMs`. */
  breakerStore?: BreakerStore;
  /** @default { threshold: 5, cooldownMs: 60_000 } */
  breaker?: { threshold?: number; cooldownMs?: number };
}

export interface HeadlessBudget {
  /** Most USD the run may spend; a model call that would start over it is refused and the run ends with outcome `limit`. */
  usd?: number;
  /** Most tokens (input plus output, every leg) the run may use; counted for every model, priced or not. */
  tokens?: number;
  /**
   * What a USD budget does with a model the price table does not know: `'warn'`
   * runs it uncounted with an `unpriced-model` warning; `'reject'` refuses the
   * run before anything is written. @default 'warn'
   */
  unknownPrice?: 'warn' | 'reject';
}

// ---------------------------------------------------------------- project instructions

/**
 * Options of {@link loadProjectInstructions} (and of `projectInstructions` on a
 * headless run). Every field is optional; a field of the wrong type or an
 * unknown field rejects with a `TypeError` before anything is read.
 */
export interface ProjectInstructionsOptions {
  /**
   * The top directory of the search: files are read in it and in every
   * directory below it down to `dir`. It must be `dir` itself or an ancestor of
   * it (a `TypeError` otherwise). Symlinked files are read only while their
   * real path stays inside the real path of this directory.
   * @default the nearest directory from `dir` upwards that holds a `.git` entry (a folder, or a file as in a worktree); `dir` alone when there is none
   */
  root?: string;
  /**
   * The file names looked for in each directory, in this order (a later name
   * takes precedence over an earlier one in the same directory). Plain names
   * only: no path separators, not `.` or `..`, each named once, at least one.
   * @default ['AGENTS.md', 'CLAUDE.md']
   */
  fileNames?: string[];
  /**
   * The most UTF-8 bytes of file text loaded, over all files: a non-negative
   * integer, or `Infinity`. The framing of the message (the preamble, each
   * file's tags and a truncation notice) is not counted.
   * @default 32768
   */
  maxBytes?: number;
  /** The role of the returned message. @default 'system' */
  role?: 'system' | 'user';
}

/** A file that was loaded, whole or in part. */
export interface ProjectInstructionFile {
  /** Where it was found, relative to the root, with `/` separators (`packages/app/CLAUDE.md`). */
  relativePath: string;
  /** Where it was found, absolute (a symlink keeps its own path here, not its target's). */
  path: string;
  /** UTF-8 bytes of its text (a leading byte-order mark is not counted). */
  bytes: number;
  /** UTF-8 bytes of its text that were loaded: `bytes`, or less when it was cut. */
  includedBytes: number;
  /** True when only the start of the file was loaded. */
  truncated: boolean;
  /** The text that was loaded (the start of the file when it was cut, without the truncation notice). */
  text: string;
}

/**
 * Why a file that exists was not loaded:
 * - `outside-root`: its real path (through a symlinked file or directory) is outside the root;
 * - `duplicate`: it is the same file as an earlier one, or its text repeats an earlier one's;
 * - `over-cap`: nothing of it fit under `maxBytes`;
 * - `not-a-file`: a directory, a FIFO, a socket or a device goes by that name;
 * - `unreadable`: a symlink whose target is missing or that loops, or text that is not valid UTF-8;
 * - `empty`: it holds nothing but whitespace.
 */
export type SkippedInstructionReason = 'outside-root' | 'duplicate' | 'over-cap' | 'not-a-file' | 'unreadable' | 'empty';

/** A file that exists where instructions are looked for, and was not loaded. */
export interface SkippedInstructionFile {
  /** Relative to the root, with `/` separators. */
  relativePath: string;
  /** Absolute. */
  path: string;
  reason: SkippedInstructionReason;
  /** A sentence for people: what was wrong, and for a duplicate, which file it repeats. */
  detail: string;
}

/** What {@link loadProjectInstructions} found. */
export interface ProjectInstructions {
  /** The absolute root the search started from. */
  root: string;
  /** Files loaded, outermost first: a later file takes precedence over an earlier one. */
  files: ProjectInstructionFile[];
  /** Files that exist and were not loaded, in the order they were found. */
  skipped: SkippedInstructionFile[];
  /** Total UTF-8 bytes of file text loaded: the sum of `files[].includedBytes`, at most `maxBytes`. */
  includedBytes: number;
  /** The message carrying them; undefined when no file was loaded. */
  message?: { role: 'system' | 'user'; content: string };
}

// ---------------------------------------------------------------- skills

export interface SkillSummary {
  /** The folder name: what `load_skill` and `read_skill_resource` take. */
  id: string;
  /** From the front matter's `name`; the id when it has none. */
  name: string;
  /** From the front matter's `description`; `''` when it has none. */
  description: string;
}

/**
 * Where skills come from. `nodeSkillSource(dir)` reads `<dir>/<id>/SKILL.md`
 * folders; any object with these three methods can stand in for it.
 */
export interface SkillSource {
  /** The skills this source holds, sorted by id. */
  list(): Promise<SkillSummary[]>;
  /** The body of SKILL.md (after its front matter). Rejects for an id the list does not hold. */
  load(id: string): Promise<string>;
  /** A text file inside the skill's folder. Rejects for a path whose real path leaves the folder. */
  readResource(id: string, path: string): Promise<string>;
}

/** What the `skills` option takes: a source, a directory, or a list of them (earlier ones win on a shared id). */
export type SkillsOption = SkillSource | string | Array<SkillSource | string>;

export interface NodeSkillSourceOptions {
  /** Largest file `readResource` returns; a bigger one is refused. @default 262144 (256 KiB) */
  maxResourceBytes?: number;
}

/** Why a skill read was refused: the `reason` of a `SkillAccessError`. */
export type SkillAccessReason =
  | 'unknown-skill'
  | 'invalid-path'
  | 'absolute-path'
  | 'outside-skill'
  | 'not-found'
  | 'not-a-file'
  | 'too-large'
  | 'not-text';

/** The skills of a run, ready to merge into its tools and system message. */
export interface SkillToolset {
  /** Every skill the run can load, sorted by id. */
  skills: SkillSummary[];
  /** `load_skill` and `read_skill_resource`; empty when there are no skills. */
  tools: AgentTools;
  /** The `<available_skills>` block for the system message; undefined when there are no skills. */
  systemText: string | undefined;
  /** Skills hidden by one of the same id in an earlier source: the id and the index of the hidden one's source. */
  shadowed: Array<{ id: string; source: number }>;
}

// ---------------------------------------------------------------- options

export interface HeadlessCommon<T> {
  store: AgentRunStore;
  /** @default a generated id (runHeadless); required by resumeHeadless */
  runId?: string;
  /** @default 'headless' */
  scope?: string;
  /** Skill folders: a source, a list of sources, or directory paths read with nodeSkillSource. */
  skills?: SkillsOption;
  /** Every event of the leg, as it happens. It must not throw: a throw ends the leg, which then rejects. */
  onEvent?: (event: AgentEvent<T>) => void;
  budget?: HeadlessBudget;
  deps?: HeadlessDeps;
  lease?: LeaseOptions;
}

export type HeadlessRunOptions<T = string> = Omit<AgentOptions<T>, 'session' | 'deps' | 'lease'> & HeadlessCommon<T> & {
  /** Loads the project's instruction files (AGENTS.md, CLAUDE.md) from this directory up to the repository root. */
  projectDir?: string;
  projectInstructions?: ProjectInstructionsOptions;
};

export type HeadlessResumeOptions<T = string> = Omit<AgentOptions<T>, 'session' | 'deps' | 'lease' | 'prompt' | 'messages'> & HeadlessCommon<T> & {
  runId: string;
  approvalResponses?: ApprovalResponse[];
  clientToolResults?: ClientToolResult[];
  retryToolCallIds?: string[];
  reconciledToolResults?: ReconciledToolResult[];
  retryFailed?: boolean;
};

// ---------------------------------------------------------------- report

/** How a leg (or a stored run) ended, for a shell to branch on. */
export type HeadlessOutcome = 'completed' | 'pending' | 'failed' | 'stopped' | 'cancelled' | 'limit' | 'busy';

/** The phase of a run, as reports name it. */
export type HeadlessPhase = 'running' | 'finalizing';

export type PendingAction =
  | {
    kind: 'approval'; resumeWith: 'approvalResponses';
    approvalId: string; token: string; toolCallId: string; toolName: string; args: JsonValue; modelStep: number;
  }
  | { kind: 'client-call'; resumeWith: 'clientToolResults'; toolCallId: string; toolName: string; args: JsonValue; modelStep: number }
  | {
    kind: 'unknown-effect'; resumeWith: ['retryToolCallIds', 'reconciledToolResults'];
    toolCallId: string; toolName: string; modelStep: number;
    /**
     * The call was held for approval: the approval and the verdict the run
     * recorded (see UnknownEffect.approval). A retry passes its gate with it.
     */
    approval?: { approvalId: string; token: string; approved?: boolean; reason?: string };
  }
  /** The run has not ended and waits for nothing but a plain resume (`resumeWith: null`). */
  | { kind: 'resume'; resumeWith: null; phase: HeadlessPhase };

export interface HeadlessWarning {
  /** Stable: `unpriced-model`, `instructions-skipped`, `answer-ignored`, `pending-unreadable`, ... */
  code: string;
  message: string;
  toolCallId?: string;
}

export interface HeadlessRetry {
  /** What failed: `model-call`, `model-stream` or `budget-admission`. */
  cause: 'model-call' | 'model-stream' | 'budget-admission';
  phase: HeadlessPhase;
  resumeWith: 'retryFailed';
}

export interface HeadlessReport<T = string> {
  kind: 'run';
  outcome: HeadlessOutcome;
  /** The stored status; `in-progress` for a run that has not reached a result. */
  status: 'completed' | 'suspended' | 'stopped' | 'failed' | 'drained' | 'in-progress';
  runId: string;
  /** The validated output (completed runs); the final text when the run has no output schema. */
  output?: T;
  /** The text of the last assistant turn. */
  text: string;
  usage: Usage;
  /** Model turns across every leg. */
  steps: number;
  cost: { usd: number; complete: boolean };
  warnings: HeadlessWarning[];
  pending: PendingAction[];
  retry?: HeadlessRetry;
  reason?: StopReason | string;
  stopDetails?: JsonValue;
  error?: SerializedError;
  messages: Message[];
  /** A sub-agent's child run: the run that started it (docs/delegation.md#sub-agents). Absent for a top-level run. */
  parentRunId?: string;
  /** The child runs the run's sub-agent calls started. Absent when it started none. */
  childRuns?: { runId: string; toolCallId: string; toolName: string; modelStep: number }[];
}

// ---------------------------------------------------------------- doctor

export type DoctorSeverity = 'error' | 'warning' | 'info';

export interface DoctorFinding {
  /** `error`: the run would fail or be refused; `warning`: it runs, not as you may expect; `info`: worth knowing. */
  severity: DoctorSeverity;
  /** Stable, kebab-case: `tool-name-invalid`, `api-key-missing`, ... (`DOCTOR_CODES` lists them all). */
  code: string;
  /** What is wrong and how to fix it. Never carries a secret's value. */
  message: string;
  /** The option the finding is about, when there is one (`tools.deploy.parameters`). */
  path?: string;
}

export interface DoctorReport {
  kind: 'doctor';
  /** No finding is an error. */
  ok: boolean;
  /** Errors first, then warnings, then infos; in check order within each. */
  findings: DoctorFinding[];
}

/**
 * What `doctor` reads. Pass the run's own options (the rest is ignored); every
 * field is `unknown` because checking a wrong value is the doctor's job.
 */
export interface DoctorOptions {
  model?: unknown;
  /** An effort level (`'low'`, `'high'`, ...), checked against the model's profile. */
  effort?: unknown;
  temperature?: unknown;
  topP?: unknown;
  toolChoice?: unknown;
  /** `true` (or a caching config object) asks the provider to cache the prompt prefix. */
  promptCaching?: unknown;
  budget?: unknown;
  /** Corrects the model's profile: any field of `ModelCapabilities` (`{ temperature: null }`, `{ effort: ['low'] }`). */
  capabilities?: unknown;
  tools?: unknown;
  skills?: unknown;
  output?: unknown;
  deps?: unknown;
  /**
   * The store the run will use, by kind: `'sqlite'`, `'postgres'` or `'memory'`
   * checks the Node version it needs. A store object is not checked.
   */
  store?: unknown;
  /** Where the API key is looked up. @default process.env */
  env?: Record<string, string | undefined>;
  /** The Node version to check the store against. @default process.versions.node */
  nodeVersion?: string;
  /** The environment variable that holds the provider's key. @default the provider's usual name (ANTHROPIC_API_KEY, ...) */
  apiKeyEnv?: string;
}

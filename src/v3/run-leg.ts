/**
 * What one leg of a V3 run keeps beside the run actor: the compiled context
 * of each step, the compiler, and the working memory. Like the execution
 * ledger, it is saved with every envelope (src/v3/run-store.ts adds it) and
 * read back on resume.
 *
 * When a step's package is compiled: at the save that precedes the step's
 * model call (the start, a step's checkpoint, a turn that finalization
 * follows), so the package blob and its manifest ride on that save. A call
 * that no save precedes (a repair turn, the first call after a drain or a
 * retried failure) compiles at the call and saves once before it.
 */
import { digestOf } from '../agent/digest.js';
import type { NormalizedOptions } from '../agent/options.js';
import type { Message, PrepareStepResult } from '../agent/types.js';
import { RUN_PROMPTS } from '../../machines/index.js';
import { createContextCompiler, isContextCompiler } from '../context/compiler.js';
import { ContextError } from '../context/errors.js';
import { historyAdditions, requestMessages } from '../context/render.js';
import { historyDigest } from '../context/history-digest.js';
import { keepsTailByDefault } from '../context/compiler.js';
import type { ContextCompiler, ContextCompilerState, ContextManifest, ContextPackage } from '../context/types.js';
import type { LanguageModel, Usage } from '../models/types.js';
import { candidatesOf } from '../runtime/model-call.js';
import type { PersistedRun } from '../runtime/record.js';
import type { AgentRunModels, AgentWarning } from '../agent/types.js';
import type { AgentRunContextStep, AgentRunEnvelopeV3, JsonObject } from './envelope.js';
import type { AgentRunStoreV3, ContextBlobInput } from './store-types.js';
import type { AgentEventV3Extra, AgentV3Options } from './run-types.js';
import {
  initialWorkingMemory, storedWorkingMemory, workingMemoryText, workingMemoryTools, type WorkingMemoryRecord,
} from './working-memory.js';
import { checkVersionedBinding, type VersionedMemoryLeg } from './versioned-leg.js';
import { dropOnResume } from './forget.js';

type Phase = 'loop' | 'finalize';

interface Opened {
  pkg: ContextPackage;
  messagesDigest: string;
  /** The blob to store with the next save; null once stored (or when the store has it already). */
  blob: ContextBlobInput | null;
  /** Its manifest is in no save yet. */
  unsaved: boolean;
  announced: boolean;
}

interface PreparedStep {
  digest: string;
  result: PrepareStepResult;
}

const keyOf = (step: number, phase: Phase) => `${step}:${phase}`;

/** The package was compiled for this model (its window, its placement rules). */
const sameModel = (manifest: Pick<ContextManifest, 'model'> | undefined, model: { provider: string; modelId: string }) =>
  manifest?.model?.provider === model.provider && manifest.model.modelId === model.modelId;

/** The history a step's request starts from, once prepareStep had its say (the same as the run's buildRequest). */
export function preparedMessages(history: readonly Message[], prepared: PrepareStepResult): Message[] {
  let messages = (prepared.messages ?? history) as Message[];
  if (prepared.system !== undefined) messages = [{ role: 'system', content: prepared.system }, ...messages.filter((m) => m.role !== 'system')];
  return messages;
}

/** The model call a save at this snapshot is followed by, if one is (mirrors the run chart). */
export function nextCallOf(snapshot: PersistedRun): { step: number; phase: Phase; history: Message[] } | null {
  const c = snapshot.context;
  const value = snapshot.value as string | Record<string, unknown>;
  if (!c || c.step >= c.maxSteps || c.drainRequested) return null;
  const history = c.messages as unknown as Message[];
  if (value === 'starting') {
    const finalize = c.toolNames.length === 0 && c.outputMode !== 'none';
    return { step: c.step, phase: finalize ? 'finalize' : 'loop', history };
  }
  if (typeof value !== 'object' || value === null) return null;
  if (value.loop === 'checkpointing') return { step: c.step, phase: 'loop', history };
  if (value.loop === 'recordingTurn') {
    const turn = c.lastTurn;
    if (!turn || turn.toolCalls.length > 0 || c.outputMode === 'none') return null;
    if (['content-filter', 'refusal', 'length'].includes(turn.finishReason)) return null;
    const prompt = c.outputMode === 'tool' ? RUN_PROMPTS.finalizeWithTool : RUN_PROMPTS.finalize;
    return { step: c.step, phase: 'finalize', history: [...history, { role: 'user', content: prompt }] };
  }
  return null;
}

export class V3Leg {
  readonly compiler: ContextCompiler | null;
  private readonly ownCompiler: boolean;
  steps: AgentRunContextStep[] = [];
  wm: WorkingMemoryRecord | null = null;
  private readonly opened = new Map<string, Opened>();
  private readonly prepared = new Map<string, PreparedStep>();
  private opts: NormalizedOptions<unknown> | null = null;
  /** Where `eventsV3` gets its extra events (a stream sets it). */
  sink: ((event: AgentEventV3Extra) => void) | null = null;
  /** The versioned memory's intents and tools, for a run with `versionedMemory` (src/v3/versioned-leg.ts). */
  versioned: VersionedMemoryLeg | null = null;

  constructor(readonly options: AgentV3Options, readonly store: AgentRunStoreV3, now: () => number) {
    const context = options.context;
    this.ownCompiler = context !== undefined && !isContextCompiler(context);
    this.compiler = context === undefined ? null : isContextCompiler(context) ? context : createContextCompiler(context);
    if (options.workingMemory) this.wm = initialWorkingMemory(options.workingMemory, now);
  }

  /** The leg's normalized options, once the engine made them. */
  bind(opts: NormalizedOptions<unknown>): void {
    this.opts = opts;
    this.versioned?.bind(opts);
  }

  /** The working-memory tools, when `workingMemory.tools` asks for them. */
  tools() {
    return workingMemoryTools({
      current: () => this.wm!,
      apply: (key, patch) => {
        const wm = this.wm!;
        const done = wm.applied?.[key];
        if (done !== undefined) return done;
        const revision = wm.revision + 1;
        this.wm = { revision, snapshot: patch(structuredClone(wm.snapshot)), applied: { ...wm.applied, [key]: revision } };
        this.sink?.({ type: 'working-memory', revision });
        return revision;
      },
    });
  }

  /** A stored record is being resumed: its steps, its compiler state and its working memory are the leg's from now on. */
  async restore(record: AgentRunEnvelopeV3): Promise<void> {
    checkVersionedBinding(record, this.versioned?.memory ?? null);
    this.versioned?.restore(record);
    this.steps = [...(record.context?.steps ?? [])];
    const state = record.context?.compiler as ContextCompilerState | undefined;
    if (this.compiler && state !== undefined) {
      if (this.ownCompiler) this.compiler.restore(state);
      else if (digestOf(this.compiler.state()) !== digestOf(state)) {
        throw new ContextError('context_state_mismatch',
          `Run ${record.runId} stored a context compiler state that differs from the state() of the compiler this resume was given; `
          + 'pass context as options (the run restores its state), or a compiler restored to the stored state. Nothing was written.');
      }
    }
    if (record.workingMemory !== undefined) this.wm = storedWorkingMemory(record.workingMemory);
    const ended = ['completed', 'failed', 'stopped'].includes(record.status);
    // A forget reached the run: its blocks leave the history, and the next step is compiled again (docs/forget.md).
    this.forgetResume = !ended && dropOnResume(record);
    if (this.forgetResume && this.compiler) this.compiler.restore({ ...this.compiler.state(), lastRetrieval: null });
    const last = this.steps[this.steps.length - 1];
    if (last && !ended && (await this.store.getBlob(last.blob.digest)).status === 'missing') {
      throw new ContextError('context_blob_missing',
        `Run ${record.runId}: the context package of step ${last.step} (${last.blob.digest}) is not in the store. Nothing was written.`);
    }
  }

  /** What the record's V3 fields hold now. */
  fields(): Pick<AgentRunEnvelopeV3, 'context' | 'workingMemory' | 'memoryIntents'> {
    return {
      ...(this.versioned ? { memoryIntents: this.versioned.intents } : {}),
      ...(this.compiler ? { context: { steps: this.steps, compiler: this.compiler.state() as unknown as JsonObject } } : {}),
      ...(this.wm ? { workingMemory: this.wm as unknown as AgentRunEnvelopeV3['workingMemory'] } : {}),
    };
  }

  /** Before a save: compiles the step the save precedes, if any. Answers the blobs the save must carry. */
  async beforeSave(snapshot: PersistedRun): Promise<ContextBlobInput[]> {
    if (this.compiler && this.opts) {
      const next = nextCallOf(snapshot);
      try {
        if (next) await this.open(next.step, next.phase, await this.prepare(next.step, next.phase, next.history));
      } catch {
        // The save goes on: a package that cannot be made (a window too small) fails the step's call, where it is made again.
      }
    }
    return [...this.opened.values()].flatMap((o) => (o.blob ? [o.blob] : []));
  }

  /** After a save landed: the packages it carried are stored; their `context` events go out. */
  afterSave(): void {
    for (const opened of this.opened.values()) {
      opened.blob = null;
      opened.unsaved = false;
    }
    this.announce();
  }

  private announce(): void {
    for (const opened of this.opened.values()) {
      if (!opened.announced) {
        opened.announced = true;
        this.sink?.({ type: 'context', step: opened.pkg.manifest.step, manifest: opened.pkg.manifest });
      }
    }
  }

  /** prepareStep for a step, asked once: the call's request takes the answer the save's compile got. */
  async prepare(step: number, phase: Phase, history: readonly Message[]): Promise<Message[]> {
    return preparedMessages(history, await this.prepareResult(step, phase, history));
  }

  async prepareResult(step: number, phase: Phase, history: readonly Message[]): Promise<PrepareStepResult> {
    const opts = this.opts!;
    const digest = historyDigest(history);
    const key = keyOf(step, phase);
    const cached = this.prepared.get(key);
    if (cached && cached.digest === digest) return cached.result;
    const result = (await opts.raw.prepareStep?.({ stepNumber: step, messages: history, phase })) ?? {};
    this.prepared.set(key, { digest, result });
    this.toolsOf.set(key, result.activeTools);
    return result;
  }

  private readonly toolsOf = new Map<string, string[] | undefined>();
  /** The resume dropped forgotten blocks from the history: the next compile says so. */
  private forgetResume = false;
  private readonly warnings: AgentWarning[] = [];

  private model(snapshotModels?: AgentRunModels | null): LanguageModel {
    return candidatesOf(this.opts!.models, snapshotModels ?? null)[0]!;
  }

  private toolNames(step: number, phase: Phase): string[] {
    const opts = this.opts!;
    if (phase === 'finalize' && opts.outputMode === 'tool') return [opts.outputToolName];
    const active = this.toolsOf.get(keyOf(step, phase));
    return Object.keys(opts.tools).filter((name) => !active || active.includes(name));
  }

  /** The step's package: its stored one when the step is reopened with the same messages, else compiled now. */
  private async open(step: number, phase: Phase, messages: Message[], model?: LanguageModel): Promise<Opened> {
    const key = keyOf(step, phase);
    const messagesDigest = historyDigest(messages);
    const target = model ?? this.model();
    const open = this.opened.get(key);
    if (open && open.messagesDigest === messagesDigest && sameModel(open.pkg.manifest, target)) return open;
    const stored = this.steps.find((s) => s.step === step && s.phase === phase);
    let refresh: ContextManifest['refresh'] | undefined;
    if (stored && (stored.manifest as unknown as ContextManifest).messagesDigest === messagesDigest
        && sameModel(stored.manifest as unknown as ContextManifest, target)) {
      // A step reopened after a restart: the package it sent (or was about to send) is sent again, the sources are not asked.
      const found = await this.store.getBlob(stored.blob.digest);
      if (found.status === 'found') {
        const opened: Opened = {
          pkg: { blocks: found.content.blocks as unknown as ContextPackage['blocks'], manifest: stored.manifest as unknown as ContextManifest },
          messagesDigest, blob: null, unsaved: false, announced: false,
        };
        this.opened.set(key, opened);
        return opened;
      }
      if (found.status === 'missing') {
        throw new ContextError('context_blob_missing', `The context package of step ${step} (${stored.blob.digest}) is not in the store.`);
      }
      refresh = 'redacted';
    }
    const pkg = await this.compiler!.compile({
      step, phase, model: target, tools: this.toolNames(step, phase), messages,
      ...(this.wm ? { workingMemory: workingMemoryText(this.wm.snapshot) } : {}),
      signal: this.opts!.raw.abortSignal ?? new AbortController().signal,
    });
    if (refresh) {
      pkg.manifest.refresh = refresh;
      pkg.manifest.redacted = true;
    }
    if (this.forgetResume) {
      this.forgetResume = false;
      pkg.manifest.refresh = 'redacted';
      pkg.manifest.cachePrefixChanged = true;
    }
    for (const w of pkg.manifest.warnings ?? []) this.warnings.push({ type: 'warning', setting: 'context', message: `context source ${w.source}: ${w.message}` });
    const records = pkg.blocks.flatMap((b) => b.records.filter((r) => r.revision !== undefined).map((r) => ({ recordId: r.id, revision: r.revision! })));
    // A package an earlier step of this run sent is stored already (no prune removes a blob a run points to): not sent again.
    const known = this.steps.some((s) => s.blob.digest === pkg.manifest.digest);
    const blob: ContextBlobInput | null = known ? null
      : { digest: pkg.manifest.digest, content: { blocks: pkg.blocks as unknown as JsonObject[] }, ...(records.length > 0 ? { records } : {}) };
    this.steps = [
      ...this.steps.filter((s) => !(s.step === step && s.phase === phase)),
      { step, phase, blob: { digest: pkg.manifest.digest }, manifest: pkg.manifest as unknown as JsonObject },
    ];
    const opened: Opened = { pkg, messagesDigest, blob, unsaved: true, announced: false };
    this.opened.set(key, opened);
    return opened;
  }

  /**
   * The messages of a step's request (after prepareStep): the package's, or the working-memory tail alone.
   * `save` saves the run when the package was compiled here, with no save before the call to carry it.
   */
  async request(
    step: number, phase: Phase, messages: Message[], model: LanguageModel, save: () => Promise<void>, emit: (warning: AgentWarning) => void,
  ): Promise<Message[]> {
    if (this.compiler) {
      const key = keyOf(step, phase);
      const ready = this.opened.get(key);
      // A package compiled for another model (the save compiled for the first candidate; the call fails over) is compiled again.
      const opened = ready && ready.messagesDigest === historyDigest(messages) && sameModel(ready.pkg.manifest, model)
        ? ready : await this.open(step, phase, messages, model);
      // No save preceded this call: the run is saved now, the package and its manifest with it, before the call.
      if (opened.unsaved) await save();
      this.announce();
      // What the sources did wrong is said once, as the step's call goes out; the step goes on without it.
      for (const warning of this.warnings.splice(0)) emit(warning);
      return requestMessages(messages, opened.pkg) as Message[];
    }
    if (this.wm) {
      const text = workingMemoryText(this.wm.snapshot);
      return text ? [...messages, { role: 'user', content: `<cairn_working_memory>\n${text}\n</cairn_working_memory>` }] : messages;
    }
    return messages;
  }

  /** The call succeeded: what joins the history before the model's turn, and the estimator's calibration. */
  afterCall(step: number, phase: Phase, model: LanguageModel, usage: Usage): Message[] {
    const key = keyOf(step, phase);
    this.prepared.delete(key);
    this.toolsOf.delete(key);
    if (this.compiler) {
      const opened = this.opened.get(key);
      this.opened.delete(key);
      if (!opened) return [];
      this.compiler.commit(opened.pkg);
      this.compiler.calibrate(opened.pkg.manifest.tokens.estimated, usage);
      return historyAdditions(opened.pkg) as Message[];
    }
    if (this.wm && keepsTailByDefault(model)) {
      const text = workingMemoryText(this.wm.snapshot);
      if (text) return [{ role: 'user', content: `<cairn_working_memory>\n${text}\n</cairn_working_memory>` }];
    }
    return [];
  }
}

/** The V3 leg of a run's options object (the one the V3 opening made), if any. */
const legs = new WeakMap<object, V3Leg>();

export function registerV3Leg(options: object, leg: V3Leg): void {
  legs.set(options, leg);
}

export function v3LegOf(options: object): V3Leg | undefined {
  return legs.get(options);
}

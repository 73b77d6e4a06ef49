/**
 * createContextCompiler: asks the sources for a step, builds the package
 * (retrieval blocks, then the working memory), fits it to the model's window,
 * and writes the manifest that says what the request carries. The compiler
 * keeps a little state between steps (its pass count, which retrieval block
 * the history holds last, the estimator's calibration); the run saves it in
 * its record and a resume restores it.
 */
import { digestOf } from '../agent/digest.js';
import { canonicalJson } from '../agent/json.js';
import { createHash } from 'node:crypto';
import { InvalidOptionsError, serializeError } from '../errors/index.js';
import { ContextError } from './errors.js';
import { createDefaultEstimator, type CalibratedEstimator } from './estimator.js';
import { messageText, retrievalMessage, tailMessage } from './render.js';
import { cachedMessageText, historyDigest } from './history-digest.js';
import type {
  CompileInput, ContextBlock, ContextBlockRecord, ContextCompiler, ContextCompilerOptions, ContextCompilerState, ContextHit,
  ContextManifest, ContextPackage, ContextSource, ContextWarning,
} from './types.js';

const DEFAULT_MAX_RECORDS = 8;

/** Claude 5.x binds its preserved thinking to the transcript prefix. */
export function keepsTailByDefault(model: { provider: string; modelId: string }): boolean {
  return model.provider === 'anthropic' && /^claude-(?:[a-z]+-)?5(?:[.-]|$)/.test(model.modelId);
}

export const initialCompilerState = (): ContextCompilerState => ({ version: 1, passes: 0, lastRetrieval: null, ratio: 1 });

/** Checks one source's answer: records with text are kept, anything else is a warning. */
function recordsOf(source: ContextSource, answer: unknown, max: number, warnings: ContextWarning[]): ContextBlockRecord[] {
  if (!Array.isArray(answer)) {
    warnings.push({ source: source.name, message: `retrieve() answered ${answer === null ? 'null' : typeof answer}, not an array of records; the step goes on without this source.` });
    return [];
  }
  const out: ContextBlockRecord[] = [];
  answer.forEach((hit: ContextHit, position) => {
    if (!hit || typeof hit !== 'object' || typeof hit.text !== 'string') {
      warnings.push({ source: source.name, message: `Record ${position} of retrieve() has no text; it was left out.` });
      return;
    }
    const index = typeof hit.index === 'number' && Number.isFinite(hit.index) ? hit.index : position;
    out.push({
      id: typeof hit.id === 'string' && hit.id !== '' ? hit.id : `${source.name}:${index}`,
      index,
      text: hit.text,
      ...(typeof hit.score === 'number' && Number.isFinite(hit.score) ? { score: hit.score } : {}),
      ...(typeof hit.revision === 'number' ? { revision: hit.revision } : {}),
    });
  });
  // Best first; a stable order for equal scores, so the same answer makes the same package.
  out.sort((a, b) => (b.score ?? 0) - (a.score ?? 0) || a.index - b.index);
  return out.slice(0, max);
}

function lastUserText(messages: CompileInput['messages']): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'user') continue;
    if (typeof m.content === 'string') return m.content;
    return m.content.map((p) => ((p as { type?: string }).type === 'text' ? (p as { text: string }).text : '')).join('');
  }
  return '';
}

/** The lowest-scored retrieval record of all blocks (the last of the highest index on ties). */
function dropWorst(blocks: ContextBlock[]): ContextBlockRecord | null {
  let worst: { block: ContextBlock; at: number } | null = null;
  for (const block of blocks) {
    if (block.kind !== 'retrieval') continue;
    block.records.forEach((r, at) => {
      const w = worst ? worst.block.records[worst.at]! : null;
      if (!w || (r.score ?? 0) < (w.score ?? 0) || ((r.score ?? 0) === (w.score ?? 0) && r.index >= w.index)) worst = { block, at };
    });
  }
  if (!worst) return null;
  const { block, at } = worst as { block: ContextBlock; at: number };
  return block.records.splice(at, 1)[0]!;
}

/**
 * A context compiler for a V3 run's `context` option (or pass its options there directly).
 *
 * @example
 * const context = createContextCompiler({ sources: [createRagContextSource({ retrieve })], window: 200_000 });
 * await runAgent({ checkpointVersion: 3, session, model, prompt, context });
 */
export function createContextCompiler(options: ContextCompilerOptions = {}): ContextCompiler {
  if (options === null || typeof options !== 'object') throw new InvalidOptionsError('createContextCompiler: options must be an object.');
  const sources = options.sources ?? [];
  if (!Array.isArray(sources)) throw new InvalidOptionsError('context.sources must be an array of sources.');
  const names = new Set<string>();
  for (const source of sources) {
    if (!source || typeof source.retrieve !== 'function' || typeof source.name !== 'string') {
      throw new InvalidOptionsError('Each of context.sources must be a source ({ name, retrieve }); see createRagContextSource.');
    }
    if (names.has(source.name)) throw new InvalidOptionsError(`context.sources: two sources are named "${source.name}"; give each its own name.`);
    if (source.name === 'working-memory') throw new InvalidOptionsError('context.sources: the name "working-memory" is the working memory\'s.');
    names.add(source.name);
  }
  const window = options.window;
  if (window !== undefined && typeof window !== 'function' && !(typeof window === 'number' && window > 0)) {
    throw new InvalidOptionsError('context.window must be a positive number of tokens or a function of the model.');
  }
  const reserve = options.reserveOutputTokens ?? 0;
  if (typeof reserve !== 'number' || !(reserve >= 0)) throw new InvalidOptionsError('context.reserveOutputTokens must be a number >= 0.');
  const maxRecords = options.maxRecordsPerSource ?? DEFAULT_MAX_RECORDS;
  if (!Number.isInteger(maxRecords) || maxRecords < 1) throw new InvalidOptionsError('context.maxRecordsPerSource must be an integer >= 1.');
  const own = options.estimator === undefined;
  if (!own && typeof options.estimator?.estimate !== 'function') throw new InvalidOptionsError('context.estimator needs estimate(text).');
  const estimator = options.estimator ?? createDefaultEstimator();
  const keepsTail = options.keepsTail ?? keepsTailByDefault;
  let state = initialCompilerState();
  /** The retrieval digest compile took of each package it made (blocks are not changed once a package is handed out). */
  const retrievalDigests = new WeakMap<ContextPackage, string>();

  const compiler: ContextCompiler = {
    kind: 'cairn-context-compiler',
    estimator,
    async compile(input: CompileInput): Promise<ContextPackage> {
      const model = { provider: input.model.provider, modelId: input.model.modelId };
      const warnings: ContextWarning[] = [];
      const query = lastUserText(input.messages);
      const blocks: ContextBlock[] = [];
      // Sources are asked one after another, in the order given: the package does not depend on which answers first.
      for (const source of sources) {
        let answer: unknown;
        try {
          answer = await source.retrieve({
            step: input.step, phase: input.phase, query, messages: input.messages, model, tools: [...input.tools], signal: input.signal,
          });
        } catch (error) {
          if (input.signal.aborted) throw error;
          warnings.push({ source: source.name, message: `retrieve() threw: ${serializeError(error).message}; the step goes on without this source.` });
          continue;
        }
        const records = recordsOf(source, answer, maxRecords, warnings);
        if (records.length > 0) blocks.push({ kind: 'retrieval', source: source.name, records });
      }
      if (input.workingMemory !== undefined && input.workingMemory !== '') {
        blocks.push({ kind: 'working-memory', source: 'working-memory', records: [{ id: 'working-memory', index: 0, text: input.workingMemory }] });
      }
      const pass = state.passes;
      const limit = typeof window === 'function' ? window(model) : window;
      const historyTokens = input.messages.reduce((sum, m) => sum + estimator.estimate(cachedMessageText(m)), 0);
      const messagesDigest = historyDigest(input.messages);
      const dropped: string[] = [];
      let manifest: ContextManifest;
      let retrievalDigest: string;
      for (;;) {
        // Each block's canonical JSON made once: the package's digest and its retrieval's are both read from them.
        const texts = blocks.map((b) => canonicalJson(b));
        retrievalDigest = sha256Of(`[${texts.filter((_, i) => blocks[i]!.kind === 'retrieval').join(',')}]`);
        const hasRetrieval = blocks.some((b) => b.kind === 'retrieval' && b.records.length > 0);
        manifest = {
          version: 1,
          step: input.step,
          phase: input.phase,
          refresh: pass === 0 ? 'initial' : 'step',
          pass,
          digest: sha256Of(`[${texts.join(',')}]`),
          messagesDigest,
          model,
          tools: [...input.tools],
          blocks: [],
          placement: {
            retrieval: !hasRetrieval ? 'none' : retrievalDigest === state.lastRetrieval ? 'unchanged' : 'appended',
            workingMemory: blocks.some((b) => b.kind === 'working-memory') ? 'tail' : 'none',
            tailKept: keepsTail(model) && blocks.some((b) => b.kind === 'working-memory'),
          },
          tokens: { estimated: 0, window: limit ?? null, package: 0 },
        };
        const retrieval = retrievalMessage({ blocks, manifest });
        const tail = tailMessage({ blocks });
        const packageTokens = (retrieval ? estimator.estimate(messageText(retrieval)) : 0) + (tail ? estimator.estimate(messageText(tail)) : 0);
        manifest.tokens = { estimated: historyTokens + packageTokens, window: limit ?? null, package: packageTokens };
        if (limit === undefined || manifest.tokens.estimated + reserve <= limit) break;
        const worst = dropWorst(blocks);
        if (!worst) {
          throw new ContextError('context_overflow',
            `Step ${input.step} needs about ${manifest.tokens.estimated + reserve} tokens (history ${historyTokens}, package ${packageTokens}, ` +
            `reserved ${reserve}) and the window of ${model.provider}:${model.modelId} is ${limit}, with every retrieval record left out; ` +
            'shorten the history (prepareStep) or give a larger window. The model was not called.');
        }
        dropped.push(worst.id);
        for (let i = blocks.length - 1; i >= 0; i--) if (blocks[i]!.records.length === 0) blocks.splice(i, 1);
      }
      manifest.blocks = blocks.map((b) => ({
        kind: b.kind, source: b.source, records: b.records.length,
        tokens: b.records.reduce((sum, r) => sum + estimator.estimate(r.text), 0),
      }));
      if (dropped.length > 0) manifest.overflow = { dropped: dropped.length, droppedIds: dropped };
      if (warnings.length > 0) manifest.warnings = warnings;
      state = { ...state, passes: state.passes + 1 };
      const pkg = { blocks, manifest };
      retrievalDigests.set(pkg, retrievalDigest);
      return pkg;
    },
    commit(pkg) {
      if (pkg.manifest.placement.retrieval === 'appended') {
        state = { ...state, lastRetrieval: retrievalDigests.get(pkg) ?? digestOf(pkg.blocks.filter((b) => b.kind === 'retrieval')) };
      }
    },
    calibrate(estimatedTokens, usage) {
      estimator.calibrate?.({
        estimatedTokens,
        inputTokens: usage.inputTokens,
        cacheReadTokens: usage.cacheReadTokens ?? 0,
        cacheWriteTokens: usage.cacheWriteTokens ?? 0,
      });
      if (own) state = { ...state, ratio: (estimator as CalibratedEstimator).ratio };
    },
    state: () => ({ ...state }),
    restore(saved) {
      if (!saved || saved.version !== 1 || typeof saved.passes !== 'number') {
        throw new InvalidOptionsError('The stored context compiler state is not one this compiler reads.');
      }
      state = { version: 1, passes: saved.passes, lastRetrieval: saved.lastRetrieval ?? null, ratio: saved.ratio ?? 1 };
      if (own) (estimator as CalibratedEstimator).ratio = state.ratio;
    },
  };
  return compiler;
}

/** True for a compiler made by createContextCompiler (or one shaped like it). */
export function isContextCompiler(value: unknown): value is ContextCompiler {
  return typeof value === 'object' && value !== null && (value as ContextCompiler).kind === 'cairn-context-compiler'
    && typeof (value as ContextCompiler).compile === 'function';
}

/** `sha256:` of a text: the digest of a value whose canonical JSON it is (as digestOf). */
function sha256Of(text: string): string {
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

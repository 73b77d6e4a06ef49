/**
 * A simulated process crash: wrappers around a run's store, model and tools
 * that count every call and, at one chosen call, freeze everything they wrap.
 */
import type { AgentRunStore, AgentTool, AgentTools } from '../../agent/types.js';
import type { LanguageModel, ModelStreamPart } from '../../models/types.js';
import { CairnTypeError } from '../../errors/index.js';
import { isPositiveInteger, never } from './internal.js';

/** Where the simulated process dies. */
export interface CrashPoint {
  /** Which kind of call: a store save, a model call (`doGenerate` or `doStream`), or a tool's `execute`. */
  kind: 'save' | 'model' | 'tool';
  /** The 1-based occurrence of that kind of call (of that tool, when `toolName` is set). */
  index: number;
  /**
   * `'before'`: the call never reaches what it wraps. `'after'`: it does (the save lands, the model
   * answers, the tool's effect runs, whether it returns or throws), and then the caller never hears back.
   */
  when: 'before' | 'after';
  /** With `kind: 'tool'`: count only this tool's executions. */
  toolName?: string;
}

/** How many calls the wrappers saw before the crash (or in the whole run, when none fired). */
export interface CrashCounts {
  saves: number;
  loads: number;
  modelCalls: number;
  /** Tool executions of every tool together. */
  toolCalls: number;
  /** Tool executions by tool name. */
  tools: Record<string, number>;
}

/** Options of {@link createCrashPlan}. */
export interface CrashPlanOptions {
  /** Where to crash. Without it, the plan only counts (see {@link countCrashPoints}). */
  at?: CrashPoint;
}

/** What {@link CrashPlan.race} settles with. */
export type CrashRaceOutcome<R> = { crashed: true } | { crashed: false; result: R };

/**
 * One simulated process. Wrap everything a run touches with the same plan; when the crash point is
 * reached, every call to anything wrapped (and every answer still on its way through a wrapper)
 * becomes a promise that never settles, so the abandoned run can do nothing more.
 */
export interface CrashPlan {
  /** The crash point, or `undefined` for a counting-only plan. */
  readonly at: CrashPoint | undefined;
  /** Whether the crash point was reached. */
  readonly fired: boolean;
  /** Resolves when the crash point is reached; stays pending if it never is. */
  readonly crashed: Promise<void>;
  /** A copy of the counts so far. */
  readonly counts: CrashCounts;
  /** Counts saves (and loads); at a `'save'` crash point, freezes. */
  wrapStore(store: AgentRunStore): AgentRunStore;
  /** Counts model calls; at a `'model'` crash point, freezes. Keeps `provider` and `modelId`, so the run's binding is unchanged. */
  wrapModel(model: LanguageModel): LanguageModel;
  /** Counts executions; at a `'tool'` crash point, freezes. Tools without `execute` (client tools) are kept as they are. */
  wrapTools<T extends AgentTools>(tools: T): T;
  /** `Promise.race` of the run and {@link crashed}: the run's result, or `{ crashed: true }`. */
  race<R>(run: Promise<R>): Promise<CrashRaceOutcome<R>>;
}

function checkPoint(at: CrashPoint): void {
  if (at === null || typeof at !== 'object') throw new CairnTypeError('invalid_options', 'createCrashPlan: `at` must be a crash point.');
  if (!['save', 'model', 'tool'].includes(at.kind)) throw new CairnTypeError('invalid_options', "createCrashPlan: `at.kind` must be 'save', 'model' or 'tool'.");
  if (!isPositiveInteger(at.index)) throw new CairnTypeError('invalid_options', 'createCrashPlan: `at.index` must be a 1-based occurrence.');
  if (at.when !== 'before' && at.when !== 'after') throw new CairnTypeError('invalid_options', "createCrashPlan: `at.when` must be 'before' or 'after'.");
  if (at.toolName !== undefined && (at.kind !== 'tool' || typeof at.toolName !== 'string' || at.toolName === '')) {
    throw new CairnTypeError('invalid_options', "createCrashPlan: `at.toolName` names a tool, and only with kind 'tool'.");
  }
}

/**
 * Creates a crash plan. Drive a run with `plan.wrapStore(store)`, `plan.wrapModel(model)` and
 * `plan.wrapTools(tools)`, abandon it with `plan.race(runPromise)`, then resume in a fresh runtime
 * from the underlying store (through {@link cloneStore}, a new store object over the same data).
 *
 * @example
 * ```ts
 * const crash = createCrashPlan({ at: { kind: 'tool', index: 1, when: 'after' } });
 * const outcome = await crash.race(runAgent({
 *   ...options,
 *   model: crash.wrapModel(model),
 *   tools: crash.wrapTools(tools),
 *   session: { store: crash.wrapStore(store), runId: 'r1', scope: 't' },
 * }));
 * // outcome.crashed === true; the tool's effect ran, its receipt was never written.
 * const resumed = await resumeAgent({ ...options, session: { store: await cloneStore(store, ['r1']), runId: 'r1', scope: 't' } });
 * ```
 */
export function createCrashPlan(options: CrashPlanOptions = {}): CrashPlan {
  const at = options.at;
  if (at !== undefined) checkPoint(at);
  let fired = false;
  let announce!: () => void;
  const crashed = new Promise<void>((resolve) => (announce = resolve));
  const counts: CrashCounts = { saves: 0, loads: 0, modelCalls: 0, toolCalls: 0, tools: {} };

  const fire = (): Promise<never> => {
    if (!fired) {
      fired = true;
      announce();
    }
    return never();
  };
  const hits = (kind: CrashPoint['kind'], index: number, when: CrashPoint['when'], toolName?: string): boolean =>
    at !== undefined && !fired && at.kind === kind && at.when === when && at.index === index
    && (at.toolName === undefined || at.toolName === toolName);
  /** An answer that arrives after the crash is never delivered. */
  const deliver = async <V>(work: Promise<V>): Promise<V> => {
    let value: V;
    try {
      value = await work;
    } catch (error) {
      if (fired) return never();
      throw error;
    }
    if (fired) return never();
    return value;
  };

  function wrapStream(stream: AsyncIterable<ModelStreamPart>, after: boolean): AsyncIterable<ModelStreamPart> {
    return (async function* frozenAfterCrash() {
      if (after) {
        // The provider answered in full; the process dies before the run sees any of it.
        try {
          for await (const _part of stream) { /* drained */ }
        } catch { /* an answer that is an error is an answer too */ }
        await fire();
      }
      const iterator = stream[Symbol.asyncIterator]();
      while (true) {
        if (fired) await never();
        const next = await deliver(iterator.next());
        if (next.done) return;
        yield next.value;
      }
    })();
  }

  const frozenStream = (): AsyncIterable<ModelStreamPart> => ({
    [Symbol.asyncIterator]: () => ({ next: () => never() }),
  });

  function wrapTool(name: string, tool: AgentTool): AgentTool {
    const execute = tool.execute;
    const wrapped: AgentTool = { ...tool };
    if (typeof tool.needsApproval === 'function') {
      const gate = tool.needsApproval;
      wrapped.needsApproval = (args, ctx) => (fired ? never() : deliver(Promise.resolve(gate(args, ctx))));
    }
    if (typeof execute === 'function') {
      wrapped.execute = async (args, ctx) => {
        if (fired) return never();
        counts.toolCalls += 1;
        const index = (counts.tools[name] = (counts.tools[name] ?? 0) + 1);
        const position = at?.toolName === undefined ? counts.toolCalls : index;
        if (hits('tool', position, 'before', name)) return fire();
        const after = hits('tool', position, 'after', name);
        let result: unknown;
        try {
          result = await execute(args, ctx);
        } catch (error) {
          if (after || fired) return fire();
          throw error;
        }
        if (after || fired) return fire();
        return result;
      };
    }
    return wrapped;
  }

  return {
    at,
    get fired() {
      return fired;
    },
    crashed,
    get counts() {
      return { ...counts, tools: { ...counts.tools } };
    },

    wrapStore(store) {
      return {
        load(runId) {
          if (fired) return never();
          counts.loads += 1;
          return deliver(store.load(runId));
        },
        async save(envelope) {
          if (fired) return never();
          const index = ++counts.saves;
          if (hits('save', index, 'before')) return fire();
          if (hits('save', index, 'after')) {
            // Landed or refused, the process is gone before it hears back.
            await store.save(envelope).catch(() => undefined);
            return fire();
          }
          return deliver(store.save(envelope));
        },
      };
    },

    wrapModel(model) {
      const wrapped: LanguageModel = {
        specificationVersion: model.specificationVersion,
        provider: model.provider,
        modelId: model.modelId,
        async doGenerate(request) {
          if (fired) return never();
          const index = ++counts.modelCalls;
          if (hits('model', index, 'before')) return fire();
          if (hits('model', index, 'after')) {
            // The provider answered (or failed); the process is gone before the run sees it.
            await model.doGenerate(request).catch(() => undefined);
            return fire();
          }
          return deliver(model.doGenerate(request));
        },
      };
      if (typeof model.doStream === 'function') {
        const doStream = model.doStream.bind(model);
        wrapped.doStream = (request) => {
          if (fired) return frozenStream();
          const index = ++counts.modelCalls;
          if (hits('model', index, 'before')) {
            void fire();
            return frozenStream();
          }
          return wrapStream(doStream(request), hits('model', index, 'after'));
        };
      }
      return wrapped;
    },

    wrapTools<T extends AgentTools>(tools: T): T {
      const out: AgentTools = {};
      for (const [name, tool] of Object.entries(tools)) out[name] = wrapTool(name, tool);
      return out as T;
    },

    race<R>(run: Promise<R>): Promise<CrashRaceOutcome<R>> {
      return Promise.race([
        run.then((result): CrashRaceOutcome<R> => ({ crashed: false, result })),
        crashed.then((): CrashRaceOutcome<R> => ({ crashed: true })),
      ]);
    },
  };
}

/**
 * Runs `scenario` once with a counting-only plan and returns how many saves, model calls and tool
 * executions (in all, and by tool name) it made: the crash points a matrix can cut at. The scenario
 * must wrap its store, model and tools with the plan it is given, and be deterministic, so that a
 * later run with a crashing plan meets the same calls in the same order.
 */
export async function countCrashPoints(scenario: (plan: CrashPlan) => Promise<unknown>): Promise<CrashCounts> {
  const plan = createCrashPlan();
  await scenario(plan);
  return plan.counts;
}

/**
 * Every crash point of a run with these counts: each save, model call and execution of each tool
 * (by tool name), once `'before'` and once `'after'`.
 */
export function listCrashPoints(counts: CrashCounts): CrashPoint[] {
  const points: CrashPoint[] = [];
  const both = (point: Omit<CrashPoint, 'when'>) => {
    points.push({ ...point, when: 'before' }, { ...point, when: 'after' });
  };
  for (let index = 1; index <= counts.saves; index++) both({ kind: 'save', index });
  for (let index = 1; index <= counts.modelCalls; index++) both({ kind: 'model', index });
  for (const [toolName, n] of Object.entries(counts.tools)) {
    for (let index = 1; index <= n; index++) both({ kind: 'tool', index, toolName });
  }
  return points;
}

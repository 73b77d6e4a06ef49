/**
 * Checks a run's `memory` option once, before anything is read or written,
 * and turns it into what the run uses. Bad input is an InvalidOptionsError
 * (or a MemoryError `memory_scope_invalid` for the scope), never a run that
 * starts and fails later.
 */
import { InvalidOptionsError } from '../errors/index.js';
import { isExecutionContext, type ExecutionContext } from '../policy/index.js';
import { MemoryError } from './errors.js';
import { checkMemoryScope, memoryScopeKey, narrowsMemoryScope } from './scope.js';
import type { MemoryScope } from './types.js';
import type { AgentMemoryOptions, MemorySeams } from './run-types.js';

export const DEFAULT_RECALL_LIMIT = 5;

/** The memory option, checked. */
export interface RunMemoryOptions {
  seams: MemorySeams;
  scope: MemoryScope;
  /** Memories recalled at most; 0: no recall. */
  recallLimit: number;
  /** The run extracts once it completed. */
  extracts: boolean;
  sweeps: boolean;
  /** The context memory calls are charged to (the seams' own, or the run's), or null. */
  execution: ExecutionContext | null;
}

const isFunction = (value: unknown) => typeof value === 'function';

export function checkMemoryOptions(memory: unknown, runExecution: ExecutionContext | null): RunMemoryOptions | null {
  if (memory === undefined) return null;
  if (memory === null || typeof memory !== 'object' || Array.isArray(memory)) {
    throw new InvalidOptionsError('memory must be an object: { seams: { store, llm, clock, generateId }, scope }.');
  }
  const options = memory as AgentMemoryOptions;
  const seams = options.seams as MemorySeams | undefined;
  if (seams === null || typeof seams !== 'object') throw new InvalidOptionsError('memory.seams must be an object: { store, llm, clock, generateId, embedder? }.');
  const store = seams.store as unknown as Record<string, unknown> | undefined;
  if (!store || !['add', 'update', 'delete', 'get', 'list', 'search', 'sweep'].every((m) => isFunction(store[m]))) {
    throw new InvalidOptionsError('memory.seams.store must implement the MemoryStore contract (add, update, delete, get, list, search, sweep).');
  }
  if (!isFunction(seams.llm)) throw new InvalidOptionsError('memory.seams.llm must be a function ({ system, user }) => text.');
  if (!seams.clock || !isFunction(seams.clock.now)) throw new InvalidOptionsError('memory.seams.clock must have now().');
  if (!isFunction(seams.generateId)) throw new InvalidOptionsError('memory.seams.generateId must be a function.');
  if (seams.embedder !== undefined && !isFunction(seams.embedder)) throw new InvalidOptionsError('memory.seams.embedder must be a function ({ text }) => { vector }.');
  if (seams.execution !== undefined && !isExecutionContext(seams.execution)) {
    throw new InvalidOptionsError('memory.seams.execution must be a context made by createExecutionContext (cairn/policy).');
  }
  if (seams.logger !== undefined && (seams.logger === null || !isFunction(seams.logger.warn))) {
    throw new InvalidOptionsError('memory.seams.logger must have warn(message).');
  }
  const scope = checkMemoryScope(options.scope, 'memory');
  const recall = options.recall ?? true;
  let recallLimit = DEFAULT_RECALL_LIMIT;
  if (recall === false) recallLimit = 0;
  else if (recall !== true) {
    if (recall === null || typeof recall !== 'object') throw new InvalidOptionsError('memory.recall must be a boolean or { limit }.');
    const limit = recall.limit ?? DEFAULT_RECALL_LIMIT;
    if (!Number.isInteger(limit) || limit < 1) throw new InvalidOptionsError('memory.recall.limit must be a positive integer.');
    recallLimit = limit;
  }
  if (options.extract !== undefined && typeof options.extract !== 'boolean') throw new InvalidOptionsError('memory.extract must be a boolean.');
  const writePolicy = options.writePolicy ?? 'session-end';
  if (writePolicy !== 'manual' && writePolicy !== 'session-end') {
    throw new InvalidOptionsError("memory.writePolicy must be 'manual' or 'session-end'.");
  }
  if (options.sweep !== undefined && options.sweep !== 'on-extract') throw new InvalidOptionsError("memory.sweep must be 'on-extract'.");
  return {
    seams,
    scope,
    recallLimit,
    extracts: options.extract !== false && writePolicy === 'session-end',
    sweeps: options.sweep === 'on-extract',
    execution: seams.execution ?? runExecution,
  };
}

/** The binding's fingerprint of the memory: its scope (a resume with another scope is refused). */
export const memoryBindingOf = (memory: RunMemoryOptions): string => memoryScopeKey(memory.scope);

/**
 * The memory scope of the latest run still running on each execution
 * context: a run under a context (or a child of one) that a running run
 * holds may only narrow that run's scope.
 */
const runningScopes = new WeakMap<ExecutionContext, MemoryScope[]>();

function scopesAbove(execution: ExecutionContext): MemoryScope | undefined {
  for (let context: ExecutionContext | null = execution; context; context = context.parent) {
    const held = runningScopes.get(context);
    if (held && held.length > 0) return held[held.length - 1];
  }
  return undefined;
}

/**
 * Claims the run's memory scope on its execution context for as long as the
 * run runs; throws a MemoryError `memory_scope_invalid` before any call when
 * the scope is wider than the one of the run it is nested in.
 */
export function holdMemoryScope(execution: ExecutionContext | null, memory: RunMemoryOptions | null): () => void {
  if (!execution || !memory) return () => undefined;
  const outer = scopesAbove(execution);
  if (outer && !narrowsMemoryScope(outer, memory.scope)) {
    throw new MemoryError(
      'memory_scope_invalid',
      `memory.scope ${memoryScopeKey(memory.scope)} is wider than the scope ${memoryScopeKey(outer)} of the run this one is nested in: ` +
      'a nested run may pin more fields, never drop one or change a user, agent or chat. Give it its own execution context.',
    );
  }
  const list = runningScopes.get(execution) ?? [];
  runningScopes.set(execution, list);
  list.push(memory.scope);
  return () => {
    const index = list.lastIndexOf(memory.scope);
    if (index >= 0) list.splice(index, 1);
  };
}

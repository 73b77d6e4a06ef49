/**
 * Where a leg becomes a V3 leg: the V3 options are checked, and every
 * configuration a V3 run refuses is refused here, before anything is read or
 * written (docs/v3.md, "What a V3 run refuses"). A leg without any V3 option
 * and without `checkpointVersion` goes on exactly as before: its options
 * object is handed back untouched.
 */
import { InvalidOptionsError } from '../errors/index.js';
import type { AgentOptions } from '../agent/options-types.js';
import { isAgentRunStoreV3, assertAgentRunStoreV3 } from './store-checks.js';
import { registerV3Leg, V3Leg } from './run-leg.js';
import { v3Adapter } from './run-store.js';
import type { AgentEventV3Extra, AgentV3Options } from './run-types.js';
import { checkWorkingMemoryOptions, WORKING_MEMORY_TOOLS } from './working-memory.js';
import { checkVersionedMemoryOptions } from './versioned-options.js';
import { VersionedMemoryLeg } from './versioned-leg.js';

const V3_OPTIONS = ['context', 'workingMemory', 'versionedMemory'] as const;

/** The `eventsV3` sink of a stream's options object (set by streamAgent and resumeStreamAgent). */
const sinks = new WeakMap<object, (event: AgentEventV3Extra) => void>();

export function withV3Sink<O extends object>(options: O, sink: (event: AgentEventV3Extra) => void): O {
  const copy = { ...options };
  sinks.set(copy, sink);
  return copy;
}

/** True when the options ask for a V3 run (or carry a V3 option, which is then refused). */
export function asksForV3(options: unknown): boolean {
  const o = options as AgentV3Options | null;
  return o !== null && typeof o === 'object' && (o.checkpointVersion === 3 || V3_OPTIONS.some((k) => o[k] !== undefined));
}

export interface OpenedV3<O> {
  options: O;
  leg: V3Leg | null;
  close(): void;
}

/** Checks a leg's V3 options; a V3 leg gets its adapter store and its leg. Throws the refusal otherwise. */
export function openV3<O extends AgentOptions<any>>(options: O, what = 'A V3 run'): OpenedV3<O> {
  if (options === null || typeof options !== 'object') return { options, leg: null, close: () => undefined };
  const v3 = options as O & AgentV3Options;
  const version = v3.checkpointVersion;
  if (version !== undefined && version !== 1 && version !== 2 && version !== 3) {
    throw new InvalidOptionsError(`checkpointVersion must be 1, 2 or 3, got ${JSON.stringify(version)}.`);
  }
  const store = options.session?.store;
  if (version !== 3) {
    for (const key of V3_OPTIONS) {
      if (v3[key] !== undefined) throw new InvalidOptionsError(`${key} is a V3 option: it needs checkpointVersion: 3 (and an AgentRunStoreV3 as session.store).`);
    }
    if (isAgentRunStoreV3(store)) {
      throw new InvalidOptionsError('session.store is an AgentRunStoreV3, which keeps only version 3 records: pass checkpointVersion: 3.');
    }
    return { options, leg: null, close: () => undefined };
  }
  if (!options.session || typeof options.session !== 'object') {
    throw new InvalidOptionsError(`${what} needs session { store, runId, scope } on an AgentRunStoreV3 (checkpointVersion: 3).`);
  }
  assertAgentRunStoreV3(store);
  const versioned = v3.versionedMemory === undefined ? null
    : checkVersionedMemoryOptions(v3.versionedMemory, options.tools as Record<string, unknown> | undefined, options.memory !== undefined);
  if (v3.context !== undefined && (v3.context === null || typeof v3.context !== 'object')) {
    throw new InvalidOptionsError('context must be a context compiler (createContextCompiler) or its options.');
  }
  if (v3.workingMemory !== undefined) checkWorkingMemoryOptions(v3.workingMemory);
  const tools = { ...(options.tools ?? {}) };
  if (v3.workingMemory?.tools) {
    for (const name of WORKING_MEMORY_TOOLS) {
      if (name in tools) throw new InvalidOptionsError(`workingMemory.tools offers ${name}; the run has a tool of that name already.`);
    }
  }
  const now = options.deps?.clock?.now ?? Date.now;
  const leg = new V3Leg(v3, store, () => now());
  leg.sink = sinks.get(options) ?? null;
  if (v3.workingMemory?.tools) Object.assign(tools, leg.tools());
  if (versioned) {
    leg.versioned = new VersionedMemoryLeg(versioned, options.session.runId, store, () => leg.sink, () => now());
    if (versioned.tools) Object.assign(tools, leg.versioned.tools());
  }
  const adapter = v3Adapter(store);
  const opened = {
    ...options,
    ...(options.tools !== undefined || v3.workingMemory?.tools || versioned?.tools ? { tools } : {}),
    session: { ...options.session, store: adapter },
  } as O;
  registerV3Leg(opened, leg);
  const detach = adapter.attach(options.session.runId, leg);
  return { options: opened, leg, close: detach };
}

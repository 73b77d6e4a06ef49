/**
 * `versionedMemory: { session, tools?, extract? }` on a V3 run: its type and
 * the checks made before anything is read or written (docs/versioned-memory.md,
 * "In a V3 run"). Nothing here touches a store.
 */
import { InvalidOptionsError } from '../errors/index.js';
import { memoryScopeKey } from '../memory/scope.js';
import { MEMORY_TOOLS, type MemorySession } from '../memory/versioned/types.js';

/** What an extraction of the run's turns reads, besides the run's own choice of messages. */
export interface VersionedMemoryExtractOptions {
  /**
   * How many of the run's own assistant turns the extraction reads, the latest ones
   * (the input's last user turn is always read). @default every turn of the run
   */
  maxTurns?: number;
}

/** The V3 run option `versionedMemory`. */
export interface VersionedMemoryRunOptions {
  /** The memory session (createMemorySession) the run writes through. Its scope is part of the run's binding. */
  session: MemorySession;
  /** Offer the model memory_remember, memory_recall, memory_revise and memory_retract. @default false */
  tools?: boolean;
  /** Extract the completed run's turns into the session: true, or the extraction's options. @default false */
  extract?: boolean | VersionedMemoryExtractOptions;
}

/** The checked option, as a leg and a reconciliation use it. */
export interface CheckedVersionedMemory {
  session: MemorySession;
  tools: boolean;
  extract: VersionedMemoryExtractOptions | null;
  /** The binding's fingerprint: the session's scope, canonical. */
  scopeKey: string;
}

const SESSION_METHODS = ['operationId', 'recall', 'remember', 'revise', 'retract', 'extract', 'receipt', 'requestDigest', 'tools'] as const;

/** True when `value` has the calls a run makes of a memory session. */
export function isMemorySession(value: unknown): value is MemorySession {
  const s = value as Record<string, unknown> | null;
  return s !== null && typeof s === 'object' && typeof s.scope === 'object' && s.scope !== null
    && SESSION_METHODS.every((name) => typeof s[name] === 'function');
}

/**
 * Checks the option's shape. `tools` are the run's own tools (a memory tool's name among them is refused);
 * `legacyMemory`: the run has the 2.3 `memory` option too (refused beside `extract`: two extractions of one run).
 */
export function checkVersionedMemoryOptions(value: unknown, tools: Record<string, unknown> | undefined, legacyMemory: boolean): CheckedVersionedMemory {
  const o = value as Partial<VersionedMemoryRunOptions> | null;
  if (o === null || typeof o !== 'object' || Array.isArray(o)) {
    throw new InvalidOptionsError('versionedMemory must be an object { session, tools?, extract? }.');
  }
  if (!isMemorySession(o.session)) {
    throw new InvalidOptionsError('versionedMemory.session must be a memory session (createMemorySession from cairn/memory/versioned).');
  }
  for (const key of Object.keys(o)) {
    if (!['session', 'tools', 'extract'].includes(key)) throw new InvalidOptionsError(`versionedMemory has no option ${JSON.stringify(key)}.`);
  }
  if (o.tools !== undefined && typeof o.tools !== 'boolean') throw new InvalidOptionsError('versionedMemory.tools must be a boolean.');
  const extract = checkExtract(o.extract);
  if (o.tools) {
    for (const name of MEMORY_TOOLS) {
      if (tools && name in tools) throw new InvalidOptionsError(`versionedMemory.tools offers ${name}; the run has a tool of that name already.`);
    }
  }
  if (extract && legacyMemory) {
    throw new InvalidOptionsError('versionedMemory.extract and memory both extract the run into a memory: give the run one of them.');
  }
  return { session: o.session, tools: o.tools === true, extract, scopeKey: memoryScopeKey(o.session.scope) };
}

function checkExtract(value: unknown): VersionedMemoryExtractOptions | null {
  if (value === undefined || value === false) return null;
  if (value === true) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidOptionsError('versionedMemory.extract must be a boolean or the extraction options { maxTurns? }.');
  }
  const e = value as Record<string, unknown>;
  if ('messages' in e) {
    throw new InvalidOptionsError('versionedMemory.extract takes no messages: the run extracts its input\'s last user turn and its own turns.');
  }
  for (const key of Object.keys(e)) {
    if (key !== 'maxTurns') throw new InvalidOptionsError(`versionedMemory.extract has no option ${JSON.stringify(key)}.`);
  }
  if (e.maxTurns !== undefined && !(Number.isInteger(e.maxTurns) && (e.maxTurns as number) >= 1)) {
    throw new InvalidOptionsError('versionedMemory.extract.maxTurns must be a whole number of at least 1.');
  }
  return e.maxTurns === undefined ? {} : { maxTurns: e.maxTurns as number };
}

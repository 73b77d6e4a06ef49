/**
 * Shared fixtures for the rule suites: deterministic deps, a store that
 * records every envelope it is asked to save, and small tool builders.
 */
import {
  createInMemoryAgentRunStore,
  type AgentDeps, type AgentEvent, type AgentRunEnvelope, type AgentRunStore, type AgentStream, type AgentTool,
  type StandardSchemaV1,
} from 'cairn/agent';

/** Ids `id-1`, `id-2`, ... in call order. */
export function counter(prefix = 'id'): () => string {
  let n = 0;
  return () => `${prefix}-${++n}`;
}

/** A fixed clock and a counter for ids: a run with a scripted model is then fully deterministic. */
export function fixedDeps(): AgentDeps {
  return { clock: { now: () => 1000 }, generateId: counter() };
}

export interface RecordingStore extends AgentRunStore {
  /** JSON of every envelope a save was asked for and that the store accepted, in order. */
  readonly saved: string[];
  /** The envelope objects as the engine handed them to save (accepted or not). */
  readonly handed: AgentRunEnvelope[];
  /** How many saves were attempted. */
  attempts(): number;
  /** JSON of the stored record of a run ('undefined' when there is none). */
  dump(runId: string): Promise<string>;
  /** Replaces the stored record through the store's own API (revision + 1), to simulate an edited or foreign record. */
  tamper(runId: string, edit: (envelope: Record<string, unknown>) => void): Promise<void>;
}

/**
 * An in-memory store that records saves. With `failOn: n`, the n-th save
 * attempt rejects (and nothing is stored by it).
 */
export function recordingStore(options: { failOn?: number } = {}): RecordingStore {
  const inner = createInMemoryAgentRunStore();
  const saved: string[] = [];
  const handed: AgentRunEnvelope[] = [];
  let attempts = 0;
  return {
    saved,
    handed,
    attempts: () => attempts,
    load: (runId) => inner.load(runId),
    async save(envelope) {
      attempts += 1;
      handed.push(envelope);
      if (attempts === options.failOn) throw new Error('disk full');
      await inner.save(envelope);
      saved.push(JSON.stringify(envelope));
    },
    async dump(runId) {
      return JSON.stringify(await inner.load(runId)) ?? 'undefined';
    },
    async tamper(runId, edit) {
      const record = (await inner.load(runId)) as unknown as Record<string, unknown>;
      edit(record);
      record.revision = (record.revision as number) + 1;
      await inner.save(record as unknown as AgentRunEnvelope);
    },
  };
}

/** A Standard Schema value backed by a function. */
export function standardSchema<T>(
  validate: (value: unknown) => { value: T } | { issues: { message: string }[] },
): StandardSchemaV1<T> {
  return { '~standard': { version: 1, vendor: 'rules-test', validate } };
}

export const emptyParams = { type: 'object' as const, properties: {}, additionalProperties: false };

/** A server tool that counts its executions. */
export function countingTool(result: unknown = 'done', extra: Partial<AgentTool> = {}): AgentTool & { runs: unknown[] } {
  const runs: unknown[] = [];
  return {
    description: 'A tool that counts its executions.',
    parameters: { type: 'object' as const, properties: {} },
    execute: (args: unknown) => {
      runs.push(args);
      return result;
    },
    runs,
    ...extra,
  };
}

export async function collect<V>(iterable: AsyncIterable<V>): Promise<V[]> {
  const out: V[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

export async function eventsOf<T>(stream: AgentStream<T>): Promise<AgentEvent<T>[]> {
  return collect(stream.events);
}

/** Tool messages of a recorded model request. */
export function toolMessages(request: { messages: readonly unknown[] } | undefined): Array<Record<string, unknown>> {
  return (request?.messages ?? []).filter((m) => (m as { role: string }).role === 'tool') as Array<Record<string, unknown>>;
}

export const tick = (ms = 0) => new Promise<void>((resolve) => setTimeout(resolve, ms));

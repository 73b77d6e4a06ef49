/**
 * The run store a V3 leg hands the engine: the session's AgentRunStoreV3 seen
 * as an AgentRunStore. The engine builds and checks envelopes as it does for
 * every run; this adapter is where they become version 3. A save gets the
 * leg's V3 fields (the compiled context, the working memory) and the package
 * blobs the save carries; a load reads the V3 record, gives the leg its V3
 * state, and hands the engine the record under the version its checks know.
 *
 * One adapter per V3 store object, so the engine's one-executor-per-run claim
 * (keyed by the store object) holds across legs; each run's leg is found by
 * its run id.
 */
import { CheckpointVersionError } from '../errors/index.js';
import type { AgentRunEnvelope } from '../agent/types.js';
import type { PersistedRun } from '../runtime/record.js';
import type { AgentRunListPage, AgentRunListQuery, AgentRunLoadOptions, AgentRunSaveOptions, AgentRunStore } from '../stores/types.js';
import type { AgentRunEnvelopeV3 } from './envelope.js';
import type { AgentRunStoreV3 } from './store-types.js';
import type { V3Leg } from './run-leg.js';

export interface V3StoreAdapter extends AgentRunStore {
  readonly v3: AgentRunStoreV3;
  /** The leg that drives `runId` in this process now. */
  attach(runId: string, leg: V3Leg): () => void;
}

const adapters = new WeakMap<AgentRunStoreV3, V3StoreAdapter>();

export function v3Adapter(store: AgentRunStoreV3): V3StoreAdapter {
  const known = adapters.get(store);
  if (known) return known;
  const legs = new Map<string, V3Leg>();
  const adapter: V3StoreAdapter = {
    v3: store,
    attach(runId, leg) {
      legs.set(runId, leg);
      return () => {
        if (legs.get(runId) === leg) legs.delete(runId);
      };
    },
    async load(runId: string, options?: AgentRunLoadOptions): Promise<AgentRunEnvelope | undefined> {
      const record = await store.load(runId, options);
      if (record === undefined) return undefined;
      if ((record as { version?: unknown }).version !== 3) throw new CheckpointVersionError((record as { version?: unknown }).version, [3]);
      await legs.get(runId)?.restore(record);
      // The engine's envelope checks know versions 1 and 2; what version 3 adds rides along untouched.
      return engineView({ ...record, version: 2 } as unknown as AgentRunEnvelope);
    },
    async save(envelope: AgentRunEnvelope, options?: AgentRunSaveOptions): Promise<void> {
      const leg = legs.get(envelope.runId);
      const blobs = leg ? await leg.beforeSave(envelope.snapshot as unknown as PersistedRun) : [];
      // The versioned-memory intents that move with this save's tool receipts (src/v3/versioned-leg.ts).
      if (leg?.versioned) await leg.versioned.beforeSave(envelope);
      // Set in place: the engine keeps this object as the record it last saved.
      const record = envelope as unknown as AgentRunEnvelopeV3;
      record.version = 3;
      if (leg) Object.assign(record, leg.fields());
      await store.save(storedPartial(record), { ...(options ?? {}), ...(blobs.length > 0 ? { blobs } : {}) });
      leg?.afterSave();
      // After a completed run's terminal commit: its extraction, whose saves follow this one (the record takes their revision).
      if (leg?.versioned) await leg.versioned.afterSave(record, options);
    },
    list: (query?: AgentRunListQuery): Promise<AgentRunListPage> => store.list(query),
    prune: (options: { terminalBefore: number }) => store.prune(options),
  };
  adapters.set(store, adapter);
  return adapter;
}

/**
 * A legacy extraction that applied only part of its plan: the engine records it `failed` with code
 * `memory_extraction_partial` (today's records); a V3 record says `partial`, with the warning in its result.
 */
const isPartial = (e: { status?: string; error?: { code?: string } } | undefined) =>
  e?.status === 'failed' && e.error?.code === 'memory_extraction_partial';

function storedPartial(record: AgentRunEnvelopeV3): AgentRunEnvelopeV3 {
  const extraction = record.memory?.extraction;
  if (!isPartial(extraction)) return record;
  const warning = {
    type: 'warning' as const, setting: 'memory', code: 'memory_extraction_partial',
    message: extraction!.error!.message,
  };
  const result = record.result as { warnings?: { code?: string }[] } | undefined;
  const warnings = result && !(result.warnings ?? []).some((w) => w.code === 'memory_extraction_partial')
    ? [...(result.warnings ?? []), warning] : result?.warnings;
  return {
    ...record,
    memory: { ...record.memory!, extraction: { ...extraction!, status: 'partial' } },
    ...(result ? { result: { ...result, warnings } as unknown as AgentRunEnvelopeV3['result'] } : {}),
  };
}

/** What the engine reads of a stored V3 record: a `partial` extraction is the `failed` one with its code it knows. */
function engineView(record: AgentRunEnvelope): AgentRunEnvelope {
  const extraction = record.memory?.extraction as { status?: string } | undefined;
  if (extraction?.status !== 'partial') return record;
  return { ...record, memory: { ...record.memory!, extraction: { ...record.memory!.extraction!, status: 'failed' } } };
}

/** What every V3 store does to a record on its way in (drop what only a load fills in) and out (fill it in). */
import type { AgentRunEnvelopeV3 } from './envelope.js';

/**
 * The envelope as a store keeps it: without `forgotten` and `saves` (filled in by a load) and without the
 * `redacted` flags of its steps and their manifests. Copied by property descriptor, not spread, so an engine
 * envelope's receipts record, built only when read, stays unbuilt.
 */
export function stripStoreFields(envelope: AgentRunEnvelopeV3): AgentRunEnvelopeV3 {
  const context = envelope.context;
  const flagged = context !== undefined && context !== null && Array.isArray(context.steps)
    && context.steps.some((s) => s?.redacted !== undefined || s?.manifest?.redacted === true);
  if (!Object.hasOwn(envelope, 'forgotten') && !Object.hasOwn(envelope, 'saves') && !flagged) return envelope;
  const descriptors = Object.getOwnPropertyDescriptors(envelope) as Record<string, PropertyDescriptor>;
  delete descriptors.forgotten;
  delete descriptors.saves;
  if (flagged) {
    const steps = context!.steps.map((s) => {
      const { redacted: _redacted, ...step } = s;
      if (step.manifest?.redacted !== true) return step;
      const { redacted: _flag, ...manifest } = step.manifest;
      return { ...step, manifest };
    });
    descriptors.context = { value: { ...context, steps }, writable: true, enumerable: true, configurable: true };
  }
  return Object.defineProperties({}, descriptors) as AgentRunEnvelopeV3;
}

/** A loaded record with the store's times and, when a forget redacted some of its packages, its redaction state. */
export function decorateLoaded(record: AgentRunEnvelopeV3, createdAt: number, updatedAt: number, redacted: ReadonlySet<string>): AgentRunEnvelopeV3 {
  record.createdAt = createdAt;
  record.updatedAt = updatedAt;
  if (redacted.size > 0 && record.context) {
    for (const step of record.context.steps) {
      if (redacted.has(step.blob.digest)) {
        step.redacted = true;
        step.manifest.redacted = true;
      }
    }
    record.forgotten = { digests: [...redacted].sort() };
  }
  return record;
}

/**
 * The packages this store object's last committed save of each running run
 * pointed to. While the stored revision is still that save's, those packages
 * are stored and referenced by the run (a package a run points to is never
 * pruned), so the next save neither writes nor looks them up again, and
 * leaves the run's refs alone when they have not changed.
 */
export class RefMemory {
  private readonly runs = new Map<string, { revision: number; digests: ReadonlySet<string> }>();

  known(runId: string, storedRevision: number | undefined): ReadonlySet<string> | undefined {
    const kept = this.runs.get(runId);
    return kept !== undefined && kept.revision === storedRevision ? kept.digests : undefined;
  }

  /** Whether `digests` are exactly the ones `known` holds. */
  static same(known: ReadonlySet<string> | undefined, digests: readonly string[]): boolean {
    return known !== undefined && known.size === digests.length && digests.every((d) => known.has(d));
  }

  keep(runId: string, revision: number, digests: readonly string[], status: string): void {
    if (status === 'running') this.runs.set(runId, { revision, digests: new Set(digests) });
    else this.runs.delete(runId);
  }

  forget(runId: string): void {
    this.runs.delete(runId);
  }
}

/** What every V3 store does to a record on its way in (drop what only a load fills in) and out (fill it in). */
import type { AgentRunEnvelopeV3 } from './envelope.js';

/** The envelope as a store keeps it: without `forgotten` and `saves` (filled in by a load) and without the `redacted` flags of its steps and their manifests. */
export function stripStoreFields(envelope: AgentRunEnvelopeV3): AgentRunEnvelopeV3 {
  const { forgotten: _forgotten, saves: _saves, ...rest } = envelope;
  if (rest.context === undefined) return rest as AgentRunEnvelopeV3;
  return {
    ...rest,
    context: {
      ...rest.context,
      steps: rest.context.steps.map((s) => {
        if (s.redacted === undefined && s.manifest?.redacted !== true) return s;
        const { redacted: _redacted, ...step } = s;
        if (step.manifest?.redacted !== true) return step;
        const { redacted: _flag, ...manifest } = step.manifest;
        return { ...step, manifest };
      }),
    },
  } as AgentRunEnvelopeV3;
}

/** A loaded record with the store's times and, when a forget redacted some of its packages, its redaction state. */
export function decorateLoaded(record: AgentRunEnvelopeV3, createdAt: number, updatedAt: number, redacted: ReadonlySet<string>): AgentRunEnvelopeV3 {
  record.createdAt = createdAt;
  record.updatedAt = updatedAt;
  if (redacted.size > 0 && record.context) {
    for (const step of record.context.steps) if (redacted.has(step.blob.digest)) {
      step.redacted = true;
      step.manifest.redacted = true;
    }
    record.forgotten = { digests: [...redacted].sort() };
  }
  return record;
}

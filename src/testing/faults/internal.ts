/**
 * Small helpers shared by the fault-injection modules. Not re-exported.
 */
import type { AgentRunEnvelope } from '../../agent/types.js';

/** A promise that never settles: what a call to a dead process, or a hung dependency, looks like. */
export function never<T = never>(): Promise<T> {
  return new Promise<T>(() => undefined);
}

/** A deep copy of a stored envelope (envelopes are plain JSON). */
export function copyEnvelope(envelope: AgentRunEnvelope): AgentRunEnvelope {
  return JSON.parse(JSON.stringify(envelope)) as AgentRunEnvelope;
}

/** A 1-based count or index. */
export function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1;
}

/**
 * Reading what a model call gave, for the provider and adapter tests: every
 * part of a stream, the parts before it failed, or the rejection of a call.
 */
import type { ModelStreamPart } from '../../src/models/types.js';

export async function collect(parts: AsyncIterable<ModelStreamPart>): Promise<ModelStreamPart[]> {
  const out: ModelStreamPart[] = [];
  for await (const part of parts) out.push(part);
  return out;
}

/** Collects parts until the stream throws; returns both (fails the test when the stream ends cleanly). */
export async function collectUntilError(parts: AsyncIterable<ModelStreamPart>): Promise<{ parts: ModelStreamPart[]; error: unknown }> {
  const out: ModelStreamPart[] = [];
  try {
    for await (const part of parts) out.push(part);
  } catch (error) {
    return { parts: out, error };
  }
  throw new Error(`The stream did not fail; it gave ${JSON.stringify(out)}`);
}

/** The rejection of a promise (fails the test when it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('The call did not fail.');
}

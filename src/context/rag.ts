/**
 * createRagContextSource: a context source over your own retrieval function.
 * Whatever retrieve() answers is checked here: a record without text is left
 * out with a warning, a retrieve() that throws gives a warning and no records.
 * The step goes on either way.
 */
import { InvalidOptionsError } from '../errors/index.js';
import type { ContextHit, ContextSource, ContextSourceInput } from './types.js';

export interface RagContextSourceOptions {
  /** Answers the records for a step; `query` is the last user message's text. */
  retrieve: (input: ContextSourceInput) => Promise<readonly ContextHit[]> | readonly ContextHit[];
  /** The source's name in manifests and warnings. @default 'rag' */
  name?: string;
}

/**
 * A source that asks `retrieve` on every compiled step.
 *
 * @example
 * const docs = createRagContextSource({
 *   retrieve: async ({ query }) => search(query).map((d, index) => ({ text: d.body, index, score: d.score })),
 * });
 * await runAgent({ checkpointVersion: 3, session, model, prompt, context: { sources: [docs] } });
 */
export function createRagContextSource(options: RagContextSourceOptions): ContextSource {
  if (!options || typeof options.retrieve !== 'function') {
    throw new InvalidOptionsError('createRagContextSource needs { retrieve } (a function).');
  }
  const name = options.name ?? 'rag';
  if (typeof name !== 'string' || name === '') throw new InvalidOptionsError('createRagContextSource: name must be a non-empty string.');
  return { name, retrieve: (input) => options.retrieve(input) };
}

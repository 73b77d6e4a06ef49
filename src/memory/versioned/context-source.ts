/**
 * A context source (cairn/context) over a session's records: each step
 * recalls the active records closest to the step's last user message. Every
 * hit carries the record's `id` and `revision`, so the package the compiler
 * stores says which revisions it holds and a forget of one of them finds it
 * (a V3 run store's `redactForgotten`).
 */
import { InvalidOptionsError } from '../../errors/index.js';
import type { ContextHit, ContextSource } from '../../context/types.js';
import type { VersionedMemorySearchHit } from './types.js';

export interface VersionedContextSourceOptions {
  /** The source's name in manifests and warnings. @default 'versioned-memory' */
  name?: string;
  /** Most records a step recalls. @default 8 */
  limit?: number;
}

/** The source, over a session's `recall`. */
export function sessionContextSource(
  recall: (input: { text: string; limit: number }) => Promise<VersionedMemorySearchHit[]>,
  options: VersionedContextSourceOptions = {},
): ContextSource {
  if (options === null || typeof options !== 'object') throw new InvalidOptionsError('contextSource takes { name?, limit? }.');
  const name = options.name ?? 'versioned-memory';
  if (typeof name !== 'string' || name === '') throw new InvalidOptionsError('contextSource: name must be a non-empty string.');
  const limit = options.limit ?? 8;
  if (!Number.isInteger(limit) || limit < 1) throw new InvalidOptionsError('contextSource: limit must be a whole number of at least 1.');
  return {
    name,
    async retrieve({ query }): Promise<ContextHit[]> {
      if (query.trim() === '') return [];
      const hits = await recall({ text: query, limit });
      return hits
        .filter((h) => h.record.text !== null)
        .map((h, index) => ({ text: h.record.text!, index, score: h.score, id: h.record.id, revision: h.record.revision }));
    },
  };
}

/**
 * Ranking for `search`, shared by every backend: cosine similarity with an
 * embedding, the share of the query's words a record holds without one.
 * Backends hand it the scope's records (SQL backends read them by scope
 * columns), so the order is the same everywhere.
 */
import type { CheckedSearch } from './records.js';
import type { MemoryRecord, MemorySearchHit, MemorySearchResult } from './types.js';

function words(text: string): Set<string> {
  return new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);
}

function cosine(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

export function rankMemories(records: readonly MemoryRecord[], search: CheckedSearch): MemorySearchResult {
  const live = search.now === undefined ? records : records.filter((r) => r.expiresAt === undefined || r.expiresAt > search.now!);
  const hits: MemorySearchHit[] = [];
  let embeddingMismatches = 0;
  if (search.embedding) {
    const query = search.embedding;
    for (const record of live) {
      const own = record.embedding;
      const comparable = own !== undefined && own.vector.length === query.vector.length
        && (own.model === undefined || query.model === undefined || own.model === query.model);
      if (!comparable) {
        embeddingMismatches++;
        continue;
      }
      hits.push({ record, score: cosine(query.vector, own.vector) });
    }
  } else {
    const asked = words(search.query);
    if (asked.size > 0) {
      for (const record of live) {
        const held = words(record.text);
        let found = 0;
        for (const word of asked) if (held.has(word)) found++;
        if (found > 0) hits.push({ record, score: found / asked.size });
      }
    }
  }
  hits.sort((a, b) => b.score - a.score || b.record.updatedAt - a.record.updatedAt || (a.record.id < b.record.id ? -1 : 1));
  return { hits: hits.slice(0, search.limit), embeddingMismatches };
}

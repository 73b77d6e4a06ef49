/**
 * List cursors: an opaque encoding of the last run of a page, (updatedAt,
 * runId), the page's sort key. Callers pass them back unchanged.
 */
import { InvalidOptionsError } from '../../errors/index.js';

const PREFIX = 'c1.';

export function encodeCursor(updatedAt: number, runId: string): string {
  return PREFIX + Buffer.from(JSON.stringify([updatedAt, runId]), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): { updatedAt: number; runId: string } {
  if (typeof cursor === 'string' && cursor.startsWith(PREFIX)) {
    try {
      const value: unknown = JSON.parse(Buffer.from(cursor.slice(PREFIX.length), 'base64url').toString('utf8'));
      if (Array.isArray(value) && value.length === 2 && typeof value[0] === 'number' && Number.isFinite(value[0])
        && typeof value[1] === 'string') {
        return { updatedAt: value[0], runId: value[1] };
      }
    } catch {
      // Falls through to the refusal below.
    }
  }
  throw new InvalidOptionsError('list: cursor is not one this store issued (pass a nextCursor back unchanged).');
}

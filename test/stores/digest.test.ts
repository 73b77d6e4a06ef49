/**
 * The set digests kept beside a run's head (src/stores/digest.ts), as random
 * tables of rows: the same rows give the same digest in any order, a save's
 * incremental update equals a digest made from scratch, and a row lost,
 * moved to another identity, or two rows trading bodies, changes it. For the
 * contribution record format 3 makes and for the sha256 one formats 1 and 2
 * made. fast-check prints the seed of a failure; FC_SEED replays it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sha256, sha256Text } from '../../src/stores/codec.js';
import { digestOf, emptyDigest, xorRowOf, xorRowTextOf } from '../../src/stores/digest.js';

type Row = readonly [identity: string | number, bodySha: Uint8Array];

const sha = fc.uint8Array({ minLength: 32, maxLength: 32 });
const identity = fc.oneof(fc.nat({ max: 100_000 }), fc.string({ minLength: 1, maxLength: 40 }));
/** 2 to 40 rows with distinct identities (as a table keyed by them holds) and distinct bodies. */
const table = fc.uniqueArray(fc.tuple(identity, sha), {
  minLength: 2, maxLength: 40, selector: ([id]) => String(id),
}).filter((rows) => new Set(rows.map(([, b]) => Buffer.from(b).toString('hex'))).size === rows.length);

const seed = process.env.FC_SEED;
const params = { numRuns: 300, ...(seed !== undefined && seed !== '' ? { seed: Number(seed) } : {}) };

describe.each([3, 2])('the row digest of record format %i', (format) => {
  const digest = (rows: readonly Row[]) => digestOf(rows, format);

  it('is the same for the same rows in any order, and a save\'s update of it equals the digest made anew', () => {
    fc.assert(fc.property(table, sha, fc.nat(), (rows, replacement, pick) => {
      expect(digest([...rows].reverse())).toEqual(digest(rows));
      // A save XORs a changed row's old contribution out and its new one in.
      const i = pick % rows.length;
      const [id, old] = rows[i]!;
      const updated = Buffer.from(digest(rows));
      xorRowOf(format, updated, id, old);
      xorRowOf(format, updated, id, replacement);
      expect(updated).toEqual(digest(rows.map((row, k) => (k === i ? [id, replacement] as const : row))));
    }), params);
  });

  it('changes when a row is lost, moved to another identity, or two rows trade bodies', () => {
    fc.assert(fc.property(table, fc.nat(), fc.nat(), (rows, a, b) => {
      const base = digest(rows);
      const i = a % rows.length;
      const j = (i + 1 + (b % (rows.length - 1))) % rows.length;
      expect(digest(rows.filter((_, k) => k !== i))).not.toEqual(base);
      const fresh = `moved:${String(rows[i]![0])}`;
      expect(digest(rows.map((row, k) => (k === i ? [fresh, row[1]] as const : row)))).not.toEqual(base);
      const traded = rows.map((row, k) => (k === i ? [row[0], rows[j]![1]] as const : k === j ? [row[0], rows[i]![1]] as const : row));
      expect(digest(traded)).not.toEqual(base);
    }), params);
  });
});

it('makes the format-3 contribution differently from the older one, and of no rows the empty digest', () => {
  const rows: Row[] = [[0, new Uint8Array(32).fill(7)], ['1:c1', new Uint8Array(32).fill(9)]];
  expect(digestOf(rows, 3)).not.toEqual(digestOf(rows, 2));
  expect(digestOf([], 3)).toEqual(emptyDigest());
  // A transcript index and the same index written as a string are one identity, as the stores write them.
  expect(digestOf([[5, rows[0]![1]]], 3)).toEqual(digestOf([['5', rows[0]![1]]], 3));
});

it('gives the same contribution from a sha256 as text (what a load hashes rows into) as from its bytes', () => {
  fc.assert(fc.property(fc.uint8Array({ maxLength: 600 }), identity, fc.constantFrom(2, 3), sha, (body, id, format, start) => {
    const text = sha256Text(body);
    expect(Buffer.from(text, 'latin1')).toEqual(sha256(body));
    const fromBytes = Buffer.from(start);
    const fromText = Buffer.from(start);
    xorRowOf(format, fromBytes, id, sha256(body));
    xorRowTextOf(format, fromText, id, text);
    expect(fromText).toEqual(fromBytes);
  }), params);
});

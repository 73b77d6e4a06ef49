/**
 * The state's digest is the sha256 of canonical JSON: for any JSON value it
 * is what digestOf (sorted copies, then JSON.stringify) gives, and it does not
 * change with key order or a JSON round trip.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { digestOf } from '../../src/agent/digest.js';
import { canonicalDigest } from '../../src/sdk/canonical.js';

describe('canonicalDigest', () => {
  it('equals digestOf for any JSON value, whatever the key order', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(canonicalDigest(value)).toBe(digestOf(value));
        const reordered = JSON.parse(JSON.stringify(value, (_k, v) => (v && typeof v === 'object' && !Array.isArray(v)
          ? Object.fromEntries(Object.entries(v).reverse()) : v)));
        expect(canonicalDigest(reordered)).toBe(canonicalDigest(value));
      }),
      { numRuns: 1000, seed: 37, verbose: true },
    );
  });

  it('writes what JSON.stringify writes for undefined, functions and toJSON', () => {
    const value = { a: undefined, b: [undefined, () => 1, 2], c: { toJSON: () => 'c' }, d: () => 1, e: -0 };
    expect(canonicalDigest(value)).toBe(digestOf(JSON.parse(JSON.stringify(value))));
  });
});

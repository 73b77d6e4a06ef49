/**
 * The bounded JSON writing that checks a tool result's size: under the limit
 * it writes exactly what JSON.stringify writes (calling the same getters and
 * toJSON methods, throwing the same errors), and it says "over the limit"
 * exactly when JSON.stringify's text would be more than that many UTF-8 bytes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonWithin, OVER_LIMIT } from '../../src/runtime/bounded-json.js';

const bytesOf = (value: unknown) => {
  const text = JSON.stringify(value);
  return text === undefined ? undefined : Buffer.byteLength(text, 'utf8');
};

/** Values JSON.stringify treats in every way it has: skipped members, nulls in arrays, toJSON, boxed primitives, odd numbers and strings. */
const anything = fc.letrec((tie) => ({
  leaf: fc.oneof(
    fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), fc.constantFrom('"', '\\', '\n', '\u0001', '\ud800', 'é', '😀'),
    fc.double(), fc.integer(), fc.constantFrom(NaN, Infinity, -0, null, true, false, undefined),
    fc.constant(() => 1), fc.constant(Symbol('s')),
  ),
  boxed: fc.oneof(
    fc.double().map((n) => Object(n) as unknown), fc.string().map((s) => Object(s) as unknown), fc.boolean().map((b) => Object(b) as unknown),
    fc.integer().map((n) => new Date(n * 1000)),
  ),
  withToJson: tie('value').map((inner) => ({ toJSON: (key: string) => ({ key, inner }) })),
  array: fc.array(tie('value'), { maxLength: 5 }),
  object: fc.dictionary(fc.string({ maxLength: 4 }), tie('value'), { maxKeys: 5 }),
  value: fc.oneof({ depthSize: 'small' }, tie('leaf'), tie('boxed'), tie('withToJson'), tie('array'), tie('object')),
})).value;

describe('jsonWithin', () => {
  it('writes what JSON.stringify writes when there is no limit', () => {
    fc.assert(fc.property(anything, (value) => {
      expect(jsonWithin(value, Number.MAX_SAFE_INTEGER)).toBe(JSON.stringify(value));
    }), { numRuns: 500 });
  });

  it('is over the limit exactly when the UTF-8 bytes of JSON.stringify are', () => {
    fc.assert(fc.property(anything, fc.nat({ max: 200 }), (value, limit) => {
      const bytes = bytesOf(value);
      const bounded = jsonWithin(value, limit);
      if (bytes !== undefined && bytes > limit) expect(bounded).toBe(OVER_LIMIT);
      else expect(bounded).toBe(JSON.stringify(value));
    }), { numRuns: 1000 });
  });

  it('takes a text of exactly the limit, and refuses it one byte under', () => {
    fc.assert(fc.property(anything, (value) => {
      const bytes = bytesOf(value);
      if (bytes === undefined) return;
      expect(jsonWithin(value, bytes)).toBe(JSON.stringify(value));
      expect(jsonWithin(value, bytes - 1)).toBe(OVER_LIMIT);
    }), { numRuns: 1000 });
    // Members left out cost nothing, however many there are.
    const sparse = { ...Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, undefined])), text: 'abc' };
    expect(jsonWithin(sparse, 14)).toBe('{"text":"abc"}');
  });

  it('throws what JSON.stringify throws: a cycle, a BigInt, a getter or toJSON that throws', () => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = cycle;
    const throwing = { get rows(): never { throw new Error('no rows'); } };
    const badToJson = { toJSON: () => { throw new RangeError('bad toJSON'); } };
    for (const value of [cycle, { total: 10n }, [Object(10n)], throwing, badToJson]) {
      let native: unknown;
      try {
        JSON.stringify(value);
      } catch (error) {
        native = error;
      }
      expect(native).toBeInstanceOf(Error);
      expect(() => jsonWithin(value, 1_000)).toThrow((native as Error).constructor as ErrorConstructor);
      expect(() => jsonWithin(value, 1_000)).toThrow((native as Error).message.split('\n')[0]);
    }
  });

  it('keeps a shared object that is no cycle, and calls each getter and toJSON once, in order', () => {
    const shared = { n: 1 };
    expect(jsonWithin({ a: shared, b: [shared, shared] }, 100)).toBe(JSON.stringify({ a: shared, b: [shared, shared] }));
    const calls: string[] = [];
    const value = {
      get first() { calls.push('first'); return { toJSON: (key: string) => { calls.push(`toJSON ${key}`); return 1; } }; },
      get second() { calls.push('second'); return 2; },
    };
    expect(jsonWithin(value, 100)).toBe('{"first":1,"second":2}');
    expect(calls).toEqual(['first', 'toJSON first', 'second']);
  });

  it('refuses a string too long to fit without reading it, and stops a long array at the limit', () => {
    // A rope of 50 million characters: reading it would flatten it into a 50 MB copy.
    expect(jsonWithin({ text: 'x'.repeat(50_000_000) }, 1_048_576)).toBe(OVER_LIMIT);
    let read = 0;
    const rows = new Proxy(new Array(1_000_000).fill(0), {
      get: (target, key) => {
        if (typeof key === 'string' && /^\d+$/.test(key)) read += 1;
        return Reflect.get(target, key);
      },
    });
    expect(jsonWithin(rows, 1_000)).toBe(OVER_LIMIT);
    // "0," is two bytes: about 500 elements fill the limit, and none after the one that crossed it is read.
    expect(read).toBeLessThanOrEqual(501);
  });
});

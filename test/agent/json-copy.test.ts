/**
 * toJson copies plain data without writing and parsing the text, and must
 * still give exactly what JSON.parse(JSON.stringify(value)) gives: the same
 * values, the same keys in the same order, own `__proto__` keys kept as keys,
 * -0 written as 0, and JSON's own result or error for everything it treats
 * specially. A property over arbitrary values, with the seed printed
 * (FC_SEED=<seed> replays it).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toJson } from '../../src/agent/json.js';
import { printedSeed } from '../support/fc-seed.js';

/** What JSON gives, or the error it throws. */
function viaText(value: unknown): { value: unknown } | { error: string } {
  try {
    return { value: value === undefined ? null : JSON.parse(JSON.stringify(value)) };
  } catch (error) {
    return { error: (error as Error).constructor.name };
  }
}

function viaCopy(value: unknown): { value: unknown } | { error: string } {
  try {
    return { value: toJson(value) };
  } catch (error) {
    return { error: (error as Error).constructor.name };
  }
}

/** Values compared with their keys' order and -0 told apart from 0. */
function same(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return Object.is(a, b);
  if (Array.isArray(a) !== Array.isArray(b) || Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  const ka = Reflect.ownKeys(a);
  const kb = Reflect.ownKeys(b);
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && same((a as never)[k], (b as never)[k]));
}

class Point {
  constructor(public x: number, public y?: number) {}
}

/** Values JSON treats in every way it has: plain data and the odd cases mixed in at any depth. */
const odd = fc.oneof(
  fc.constantFrom(undefined, -0, NaN, Infinity, -Infinity, null, () => 1, Symbol('s')),
  fc.date({ noInvalidDate: false }),
  fc.bigInt().map((n) => n),
  fc.integer().map((x) => new Point(x)),
  fc.string().map((s) => new String(s)),
  fc.constant(new Map([[1, 2]])),
  fc.constant(Object.create(null) as object),
  fc.constant({ toJSON: () => ({ replaced: true }) }),
  fc.constant(JSON.parse('{"__proto__": {"polluted": 1}, "a": 1}') as object),
);
const value = fc.letrec((tie) => ({
  any: fc.oneof({ depthSize: 'small' }, fc.jsonValue(), odd, tie('array'), tie('object')),
  array: fc.array(tie('any'), { maxLength: 6 }).chain((a) => fc.constant(a)),
  object: fc.dictionary(fc.oneof(fc.string(), fc.constantFrom('__proto__', 'constructor', '0', '10', '-1', '')), tie('any'), { maxKeys: 6 }),
})).any;

describe('toJson', () => {
  it('is JSON.parse(JSON.stringify(value)), key order, -0 and errors included', () => {
    const seed = printedSeed('toJson property');
    fc.assert(fc.property(value, (v) => {
      const text = viaText(v);
      const copy = viaCopy(v);
      if ('error' in text) {
        expect(copy).toEqual(text);
        return;
      }
      expect('value' in copy && same(copy.value, text.value), JSON.stringify(text)).toBe(true);
    }), { seed, numRuns: 2_000 });
  });

  it('copies sparse arrays, cycles and very deep values as JSON does', () => {
    const sparse = [1, , 3]; // eslint-disable-line no-sparse-arrays
    expect(toJson(sparse)).toEqual([1, null, 3]);
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = { cycle };
    expect(() => toJson(cycle)).toThrow(TypeError);
    let deep: unknown = 'leaf';
    for (let i = 0; i < 1_000; i++) deep = { d: [deep] };
    expect(same(toJson(deep), JSON.parse(JSON.stringify(deep)))).toBe(true);
    const withProto = toJson<Record<string, unknown>>(JSON.parse('{"__proto__": {"x": 1}}'));
    expect(Object.hasOwn(withProto, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(withProto)).toBe(Object.prototype);
    // A getter is read once, as JSON reads it.
    let reads = 0;
    expect(toJson({ get g() { reads++; return 2; } })).toEqual({ g: 2 });
    expect(reads).toBe(1);
    // Nothing is shared with the value copied.
    const source = { list: [{ n: 1 }] };
    const copied = toJson<typeof source>(source);
    expect(copied.list).not.toBe(source.list);
    expect(copied.list[0]).not.toBe(source.list[0]);
  });
});

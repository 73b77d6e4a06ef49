import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parsePartialJson, scanPartialJson } from '../../src/agent/partial-json.js';

// Reproduce a failure with FC_SEED=<seed printed by fast-check>.
const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED);
const runs = { numRuns: 200, ...(seed === undefined ? {} : { seed }) };

const draft = (value: unknown) => ({ value, complete: false });
const whole = (value: unknown) => ({ value, complete: true });

describe('parsePartialJson', () => {
  it.each([
    ['{"a": 1, "b": [true, null]}', whole({ a: 1, b: [true, null] })],
    ['  "text"\n', whole('text')],
    ['12', whole(12)],
    ['-0.5e3', whole(-500)],
    ['[]', whole([])],
  ])('reads the whole document %j', (text, expected) => {
    expect(parsePartialJson(text)).toStrictEqual(expected);
  });

  it.each([
    ['{', draft({})],
    ['[', draft([])],
    ['"Ali', draft('Ali')],
    ['{"name": "Ali', draft({ name: 'Ali' })],
    ['{"name', draft({})],
    ['{"name"', draft({})],
    ['{"name": ', draft({})],
    ['{"a": 1, ', draft({ a: 1 })],
    ['{"a": tr', draft({})],
    ['{"a": true', draft({ a: true })],
    ['[1, 2', draft([1])],
    ['[1, 2 ', draft([1, 2])],
    ['[1, -', draft([1])],
    ['[1, 2.', draft([1])],
    ['[1, 2e', draft([1])],
    ['[1, nul', draft([1])],
    ['[{"a": [1, {"b": "x', draft([{ a: [1, { b: 'x' }] }])],
    ['"ab\\', draft('ab')],
    ['"ab\\u00', draft('ab')],
    ['"ab\\u00e9c', draft('abéc')],
    ['"a\\nb', draft('a\nb')],
  ])('drafts the prefix %j', (text, expected) => {
    expect(parsePartialJson(text)).toStrictEqual(expected);
  });

  it.each(['', '   ', 'tru', '-', '1.', '"\u0001"', 'hello', '{a: 1}', '[1,]', '{"a" 1}', '{"a":1}}', '[1] x', '"\\x"', '"\\u00zz"', '01 '])(
    'has no draft for %j',
    (text) => {
      expect(parsePartialJson(text)).toBeUndefined();
    },
  );

  it('tolerates a code fence around the document', () => {
    expect(parsePartialJson('`')).toBeUndefined();
    expect(parsePartialJson('```json')).toBeUndefined();
    expect(parsePartialJson('```json\n')).toBeUndefined();
    expect(parsePartialJson('```json\n{"a": [1,')).toStrictEqual(draft({ a: [1] }));
    expect(parsePartialJson('```json\n{"a": 1}')).toStrictEqual(whole({ a: 1 }));
    expect(parsePartialJson('```json\n{"a": 1}\n`')).toStrictEqual(whole({ a: 1 }));
    expect(parsePartialJson('```json\n{"a": 1}\n```')).toStrictEqual(whole({ a: 1 }));
    expect(parsePartialJson('\n```\n[true]\n```\nDone.')).toStrictEqual(whole([true]));
    // Without an opening fence, a closing one is stray text.
    expect(parsePartialJson('{"a": 1}\n```')).toBeUndefined();
  });

  it('keeps a "__proto__" key as data, as JSON.parse does', () => {
    const result = parsePartialJson('{"__proto__": {"x": 1}, "y": 2, "z');
    expect(Object.getPrototypeOf(result!.value)).toBe(Object.prototype);
    expect(Object.keys(result!.value as object)).toEqual(['__proto__', 'y']);
    expect(JSON.stringify(result!.value)).toBe('{"__proto__":{"x":1},"y":2}');
  });

  it('counts the whole elements of a top-level array', () => {
    expect(scanPartialJson('[{"a":1')?.finishedElements).toBe(0);
    expect(scanPartialJson('[{"a":1}')?.finishedElements).toBe(1);
    expect(scanPartialJson('[{"a":1},')?.finishedElements).toBe(1);
    expect(scanPartialJson('[{"a":1},{')?.finishedElements).toBe(1);
    expect(scanPartialJson('[1, 2')?.finishedElements).toBe(1);
    expect(scanPartialJson('[1, 2]')?.finishedElements).toBe(2);
    expect(scanPartialJson('{"a": [1, 2]}')?.finishedElements).toBe(0);
  });

  it('does not overflow the stack on deep nesting', () => {
    expect(() => parsePartialJson('['.repeat(100_000))).not.toThrow();
  });
});

describe('parsePartialJson properties', () => {
  it('reads every prefix of a JSON document without throwing, and the whole one exactly', () => {
    fc.assert(
      fc.property(fc.json(), (text) => {
        checkEveryPrefix(text);
      }),
      runs,
    );
  });

  it('does the same for indented documents in a code fence', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const body = JSON.stringify(value, null, 2);
        const text = `\`\`\`json\n${body}\n\`\`\``;
        for (let end = 0; end <= text.length; end++) parsePartialJson(text.slice(0, end));
        expect(parsePartialJson(text)).toStrictEqual(whole(JSON.parse(body)));
        checkEveryPrefix(body);
      }),
      runs,
    );
  });
});

/** Every prefix gives nothing or a draft of the final value; `complete` exactly when JSON.parse accepts the prefix. */
function checkEveryPrefix(text: string): void {
  const final: unknown = JSON.parse(text);
  for (let end = 0; end <= text.length; end++) {
    const prefix = text.slice(0, end);
    const result = scanPartialJson(prefix);
    const parsed = tryParse(prefix);
    if (parsed.ok) {
      expect(result).toBeDefined();
      expect(result!.complete).toBe(true);
      expect(result!.value).toStrictEqual(parsed.value);
    } else if (result !== undefined) {
      expect(result.complete).toBe(false);
    }
    if (result === undefined) continue;
    // Drafts are plain JSON (checked structurally: -0, which JSON.parse gives for "-0", does not survive a JSON round trip).
    expect(isPlainJson(result.value)).toBe(true);
    // A top-level number may still grow (`1` of `12`); anything else only grows towards the final value.
    if (typeof final !== 'number') expect(isDraftOf(result.value, final)).toBe(true);
    if (Array.isArray(result.value)) {
      expect(result.finishedElements).toBeLessThanOrEqual(result.value.length);
      const whole = result.value.slice(0, result.finishedElements);
      expect(whole).toStrictEqual((final as unknown[]).slice(0, result.finishedElements));
    }
  }
  expect(parsePartialJson(text)).toStrictEqual(whole(final));
}

function tryParse(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/** `draft` could be what a prefix of `final`'s text shows: at most one entry still open, the rest equal. */
function isDraftOf(draft: unknown, final: unknown): boolean {
  if (typeof final === 'string') return typeof draft === 'string' && final.startsWith(draft);
  if (Array.isArray(final)) {
    if (!Array.isArray(draft) || draft.length > final.length) return false;
    return draft.every((item, i) => (i < draft.length - 1 ? equal(item, final[i]) : isDraftOf(item, final[i])));
  }
  if (final !== null && typeof final === 'object') {
    if (draft === null || typeof draft !== 'object' || Array.isArray(draft)) return false;
    const entries = Object.entries(draft);
    const target = final as Record<string, unknown>;
    if (!entries.every(([key]) => Object.hasOwn(target, key))) return false;
    const open = entries.filter(([key, value]) => !equal(value, target[key]));
    return open.length === 0 || (open.length === 1 && isDraftOf(open[0]![1], target[open[0]![0]]));
  }
  return equal(draft, final);
}

function equal(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function isPlainJson(value: unknown): boolean {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isPlainJson);
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.values(value as Record<string, unknown>).every(isPlainJson);
  }
  return false;
}

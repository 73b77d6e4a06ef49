/**
 * A part is read from the bytes a driver hands over, in place: a Buffer that
 * is a view into a larger one (pg slices its rows out of the socket's
 * buffer), or a plain Uint8Array. The value comes back whole either way, and
 * bytes around or after the part never become part of it.
 */
import { describe, expect, it } from 'vitest';
import { decodeFramed, encodePart } from '../../src/stores/codec.js';
import { StoredRecordError } from '../../src/errors/index.js';

const value = { role: 'tool', toolCallId: 'c1', content: [{ type: 'text', text: 'é'.repeat(40) + 'x'.repeat(300) }], n: -3.5, ok: true };

/** `part` inside a larger buffer, with `before` and `after` bytes of noise around it. */
function embedded(part: Buffer, before: number, after: number): Buffer {
  const big = Buffer.alloc(before + part.length + after, 0xa5);
  part.copy(big, before);
  return big.subarray(before, before + part.length);
}

describe('decodeFramed', () => {
  it('reads a part from a view into a larger buffer, and from a plain Uint8Array', () => {
    const part = encodePart(value);
    expect(decodeFramed('r', embedded(part, 17, 64)).value).toEqual(value);
    expect(decodeFramed('r', new Uint8Array(part)).value).toEqual(value);
    const view = new Uint8Array(embedded(part, 5, 9).buffer, 5, part.length);
    expect(Buffer.isBuffer(view)).toBe(false);
    expect(decodeFramed('r', view).value).toEqual(value);
    expect(decodeFramed('r', view, false).value).toEqual(value);
  });

  it('keeps an own __proto__ key as a key, read in place as well', () => {
    const tricky = JSON.parse('{"a":1,"__proto__":{"polluted":true}}') as Record<string, unknown>;
    const read = decodeFramed<Record<string, unknown>>('r', embedded(encodePart(tricky), 3, 3)).value;
    expect(Object.keys(read)).toEqual(['a', '__proto__']);
    expect(Object.getPrototypeOf(read)).toBe(Object.prototype);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it('refuses a part with bytes after it, a bad magic, a future format and a bad checksum', () => {
    const part = encodePart(value);
    const longer = Buffer.concat([part, Buffer.from([0xc0])]);
    const codes = (bytes: Uint8Array, checked = true) => {
      try {
        decodeFramed('r', bytes, checked);
        return 'read';
      } catch (error) {
        expect(error).toBeInstanceOf(StoredRecordError);
        return (error as StoredRecordError).code;
      }
    };
    expect(codes(longer, false)).toBe('record_corrupt');
    const magic = Buffer.from(part);
    magic[1] = 0x58;
    expect(codes(magic)).toBe('record_corrupt');
    const future = Buffer.from(part);
    future[3] = 9;
    expect(codes(future)).toBe('record_version_unsupported');
    const flipped = Buffer.from(part);
    flipped[flipped.length - 1] = flipped[flipped.length - 1]! ^ 1;
    expect(codes(flipped)).toBe('record_corrupt');
    expect(codes(part.subarray(0, 20))).toBe('record_corrupt');
  });
});

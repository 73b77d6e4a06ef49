import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/agent/json.js';
import { configDigestOf, digestOf } from '../../src/agent/digest.js';

describe('canonicalJson', () => {
  it('sorts keys at every depth, drops undefined members, and keeps a __proto__ key as a key', () => {
    const value = JSON.parse('{"b":1,"__proto__":{"y":[3,{"d":1,"c":2}]},"a":[null,{"z":0,"x":1}]}') as Record<string, unknown>;
    (value as { u?: unknown }).u = undefined;
    expect(canonicalJson(value)).toBe('{"__proto__":{"y":[3,{"c":2,"d":1}]},"a":[null,{"x":1,"z":0}],"b":1}');
    expect(Object.getPrototypeOf(JSON.parse(canonicalJson(value)))).toBe(Object.prototype);
  });

  it('configDigestOf is digestOf, asked again or not', () => {
    const tools = [{ name: 'step', parameters: { type: 'object', properties: { n: { type: 'number' } } } }];
    expect(configDigestOf(tools)).toBe(digestOf(tools));
    expect(configDigestOf(structuredClone(tools))).toBe(digestOf(tools));
    const long = { text: 'x'.repeat(10_000) };
    expect(configDigestOf(long)).toBe(digestOf(long));
  });
});

/**
 * historyDigest keeps, per first message, the hash state of the last history
 * it digested, and extends it when the next history holds the same message
 * objects in the same places. Whatever the order of calls, its answer must be
 * the digest of the history taken from scratch: a wrong digest would make a
 * reopened step reuse a package compiled for other messages.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/agent/json.js';
import { historyDigest } from '../../src/context/history-digest.js';
import type { ModelMessage } from '../../src/models/types.js';
import { replayParams } from '../support/fc-seed.js';

/** The digest as the docs define it: sha256 of the messages' canonical-JSON hashes, in order. */
function fromScratch(messages: readonly ModelMessage[]): string {
  const h = createHash('sha256');
  for (const m of messages) h.update(createHash('sha256').update(canonicalJson(m)).digest('hex'));
  return `sha256:${h.digest('hex')}`;
}

const user = (text: string): ModelMessage => ({ role: 'user', content: text });

describe('historyDigest', () => {
  it('answers the from-scratch digest when a history grows, repeats, forks, shrinks or is rebuilt from copies', () => {
    const a = user('start');
    const b = user('b');
    const c = user('c');
    const d = user('d');
    const cases: ModelMessage[][] = [
      [a], [a, b], [a, b], [a, b, c], [a, b, d], [a, b, c, d], [a], [a, c], [a, b, c, d],
      [structuredClone(a), b, c, d], [a, structuredClone(b), c], [],
    ];
    for (const history of cases) expect(historyDigest(history)).toBe(fromScratch(history));
  });

  it('does not take a history whose message at a kept place was replaced for the kept one', () => {
    const a = user('start');
    const history = [a, user('one'), user('two')];
    expect(historyDigest(history)).toBe(fromScratch(history));
    // The same array object, its middle message replaced, then grown: the kept state no longer applies.
    history[1] = user('other');
    history.push(user('three'));
    expect(historyDigest(history)).toBe(fromScratch(history));
    expect(historyDigest(history)).not.toBe(fromScratch([a, user('one'), user('two'), user('three')]));
  });

  it('matches the from-scratch digest over any sequence of histories built from a shared pool of messages', () => {
    const pool = Array.from({ length: 6 }, (_, i) => user(`m${i}`));
    const firsts = [user('first-0'), user('first-1')];
    fc.assert(
      fc.property(
        fc.array(fc.record({ first: fc.integer({ min: 0, max: 1 }), rest: fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 8 }) }), { minLength: 1, maxLength: 12 }),
        (histories) => {
          for (const { first, rest } of histories) {
            const history = [firsts[first]!, ...rest.map((i) => pool[i]!)];
            expect(historyDigest(history)).toBe(fromScratch(history));
          }
        },
      ),
      replayParams(300),
    );
  });
});

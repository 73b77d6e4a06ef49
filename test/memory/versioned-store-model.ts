/**
 * A differential property over versioned memory stores: random commits
 * (good and refused ones, replays, mismatches) and forgets, applied to the
 * in-memory store and to another store, must get the same answers (values,
 * or error codes) and leave the same state, read back through every call.
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import type { MemoryScope, VersionedMemoryMutation, VersionedMemoryStore } from 'cairn/memory/versioned';
import { createInMemoryVersionedMemoryStore } from 'cairn/memory/versioned';
import { printedSeed, replayParams } from '../support/fc-seed.js';

const SCOPES: MemoryScope[] = [{ userId: 'ada' }, { userId: 'ada', agentId: 'support' }];
const IDS = ['a', 'b', 'c'];
const TEXTS = ['green tea', 'black tea daily', 'jazz and tea', 'coffee'];
const QUERIES = ['tea', 'green tea', 'jazz coffee'];
const digestOf = (n: number) => `sha256:${String(n).repeat(64)}`;

const mutation: fc.Arbitrary<VersionedMemoryMutation> = fc.oneof(
  fc.record({ op: fc.constant('add' as const), id: fc.constantFrom(...IDS), text: fc.constantFrom(...TEXTS), origin: fc.constantFrom('explicit' as const, 'inferred' as const) }),
  fc.record({ op: fc.constant('revise' as const), id: fc.constantFrom(...IDS), text: fc.constantFrom(...TEXTS) }),
  fc.record({ op: fc.constant('retract' as const), id: fc.constantFrom(...IDS) }),
);
const step = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('commit' as const), scope: fc.nat(1), op: fc.nat(5), digest: fc.nat(1), mutations: fc.array(mutation, { maxLength: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('forget' as const), scope: fc.nat(1), id: fc.constantFrom(...IDS), revision: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }) }) },
);
type Step = typeof step extends fc.Arbitrary<infer T> ? T : never;

async function outcome(call: () => Promise<unknown>): Promise<unknown> {
  try {
    return { value: await call() };
  } catch (error) {
    return { code: (error as { code?: unknown }).code };
  }
}

function apply(store: VersionedMemoryStore, s: Step, at: number): Promise<unknown> {
  const scope = SCOPES[s.scope]!;
  if (s.kind === 'forget') return outcome(() => store.forget({ scope, id: s.id, revision: s.revision, at }));
  return outcome(() => store.commit({ scope, operationId: `op-${s.op}`, requestDigest: digestOf(s.digest), mutations: s.mutations, at }));
}

/** Everything a store answers about the scopes the steps use. */
async function stateOf(store: VersionedMemoryStore): Promise<unknown> {
  const state: unknown[] = [];
  for (const scope of SCOPES) {
    state.push(await store.scopeRevision({ scope }), await store.list({ scope, includeRetracted: true, includeForgotten: true }),
      await store.list({ scope }), await store.forgotten({ scope }));
    for (const id of IDS) state.push(await store.history({ scope, id }), await store.get({ scope, id }));
    for (const text of QUERIES) state.push(await store.search({ scope, text }));
    for (let op = 0; op < 6; op++) state.push(await store.receipt({ scope, operationId: `op-${op}` }));
  }
  return state;
}

/** Runs the property: `open()` gives a fresh store of the kind under test, `close` ends it. */
export async function checkAgainstInMemory(
  what: string, runs: number, open: () => Promise<VersionedMemoryStore>, close: (store: VersionedMemoryStore) => Promise<void>,
): Promise<void> {
  printedSeed(what);
  await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 20 }), async (steps) => {
    const model = createInMemoryVersionedMemoryStore();
    const store = await open();
    try {
      for (const [i, s] of steps.entries()) {
        expect(await apply(store, s, 1_000 + i), `step ${i}: ${JSON.stringify(s)}`).toEqual(await apply(model, s, 1_000 + i));
      }
      expect(await stateOf(store)).toEqual(await stateOf(model));
    } finally {
      await close(store);
    }
  }), replayParams(runs));
}

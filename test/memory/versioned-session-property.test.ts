/**
 * The session against a model of it: random sequences of extractions (a few
 * operation ids, a few message sets, answers that are good, not JSON, cite a
 * missing label, or throw), remembers under reused operation ids and
 * retracts. After every call the session answered as the model says: an
 * operation that committed is answered from its receipt (the LLM not asked,
 * nothing applied), another request under it is memory_receipt_mismatch, a
 * refused call leaves the scope's revision where it was, and an extraction
 * adds exactly the facts no active record holds. fast-check prints the seed;
 * FC_SEED (and FC_PATH) replay it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createInMemoryVersionedMemoryStore, createMemorySession } from 'cairn/memory/versioned';
import { printedSeed, replayParams } from '../support/fc-seed.js';

const ADA = { userId: 'ada' };
const FACTS = ['Ada prefers tea.', 'ada prefers  TEA.', 'Ada lives in Oslo.', 'Ada has a cat.'];
const MESSAGE_SETS = [
  [{ id: 'r:0', role: 'user' as const, text: 'I prefer tea.' }],
  [{ id: 'r:0', role: 'user' as const, text: 'I live in Oslo.' }, { id: 'r:1', role: 'assistant' as const, text: 'Nice.' }],
  [{ id: 'chat-9', role: 'user' as const, text: 'I have a cat.' }, { id: 'r:1', role: 'assistant' as const, text: 'Cute.' }],
];
const norm = (t: string) => t.trim().replace(/\s+/g, ' ').toLowerCase();

const answer = fc.oneof(
  fc.record({ kind: fc.constant('facts' as const), facts: fc.array(fc.record({ text: fc.constantFrom(...FACTS), label: fc.nat(1) }), { maxLength: 3 }) }),
  fc.record({ kind: fc.constantFrom('not-json' as const, 'unknown-label' as const, 'throws' as const) }),
);
const op = fc.oneof(
  fc.record({ kind: fc.constant('extract' as const), opId: fc.nat(2), set: fc.nat(MESSAGE_SETS.length - 1), answer }),
  fc.record({ kind: fc.constant('remember' as const), opId: fc.option(fc.nat(2), { nil: undefined }), text: fc.constantFrom(...FACTS) }),
  fc.record({ kind: fc.constant('retract' as const), pick: fc.nat(20) }),
);
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

describe('versioned memory session, against a model', () => {
  it('applies each operation once and refuses whole', async () => {
    const seed = printedSeed('versioned memory session property');
    await fc.assert(fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
      const store = createInMemoryVersionedMemoryStore();
      let next: Op | undefined;
      let llmCalls = 0;
      let n = 0;
      const session = createMemorySession({
        store, scope: ADA, generateId: () => `m${++n}`,
        llm: async ({ messages }) => {
          llmCalls++;
          const a = (next as Extract<Op, { kind: 'extract' }>).answer;
          if (a.kind === 'throws') throw new Error('LLM down');
          if (a.kind === 'not-json') return 'sure!';
          if (a.kind === 'unknown-label') return JSON.stringify({ facts: [{ text: 'x y', sources: [`s${messages.length}`] }] });
          const { facts } = a as Extract<typeof a, { kind: 'facts' }>;
          return JSON.stringify({ facts: facts.map((f) => ({ text: f.text, sources: [`s${Math.min(f.label, messages.length - 1)}`] })) });
        },
      });
      // The model: each committed operation's request, the active texts, the scope revision.
      const committed = new Map<string, string>();
      const active = new Map<string, string>();
      let revision = 0;
      for (const step of ops) {
        next = step;
        const before = llmCalls;
        if (step.kind === 'extract') {
          const request = { operationId: `x${step.opId}`, runId: 'r', messages: MESSAGE_SETS[step.set]! };
          const key = `extract:${step.set}`;
          const result = await session.extract(request).then((r) => r, (e: { code?: string; message: string }) => e);
          const prior = committed.get(request.operationId);
          if (prior !== undefined) {
            expect(llmCalls).toBe(before);
            if (prior === key) expect(result).toMatchObject({ replayed: true });
            else expect(result).toMatchObject({ code: 'memory_receipt_mismatch' });
          } else {
            expect(llmCalls).toBe(before + 1);
            const a = step.answer;
            if (a.kind !== 'facts') {
              expect(result).toMatchObject(a.kind === 'throws' ? { message: 'LLM down' } : { code: a.kind === 'not-json' ? 'memory_llm_invalid' : 'memory_source_unknown' });
            } else {
              const held = new Set([...active.values()].map(norm));
              const fresh = a.facts.map((f) => f.text).filter((t) => (held.has(norm(t)) ? false : (held.add(norm(t)), true)));
              expect(result).toMatchObject({ replayed: false, receipt: { planned: fresh.length, scopeRevision: revision + 1 } });
              const { receipt } = result as { receipt: { records: { id: string }[] } };
              receipt.records.forEach((r, i) => active.set(r.id, fresh[i]!));
              committed.set(request.operationId, key);
              revision++;
            }
          }
        } else if (step.kind === 'remember') {
          const operationId = step.opId === undefined ? undefined : `w${step.opId}`;
          const key = `remember:${step.text}`;
          const result = await session.remember({ text: step.text, ...(operationId ? { operationId } : {}) }).then((r) => r, (e: { code?: string }) => e);
          const prior = operationId === undefined ? undefined : committed.get(operationId);
          if (prior === undefined) {
            expect(result).toMatchObject({ replayed: false, receipt: { scopeRevision: revision + 1, planned: 1 } });
            active.set((result as { receipt: { records: { id: string }[] } }).receipt.records[0]!.id, step.text);
            if (operationId) committed.set(operationId, key);
            revision++;
          } else if (prior === key) {
            expect(result).toMatchObject({ replayed: true });
          } else {
            expect(result).toMatchObject({ code: 'memory_receipt_mismatch' });
          }
        } else {
          const ids = [...active.keys()];
          if (ids.length === 0) continue;
          const id = ids[step.pick % ids.length]!;
          await session.retract({ id });
          active.delete(id);
          revision++;
        }
        expect(await store.scopeRevision({ scope: ADA })).toBe(revision);
      }
      const listed = await store.list({ scope: ADA });
      expect(new Map(listed.map((r) => [r.id, r.text]))).toEqual(active);
    }), { ...replayParams(150), seed });
  });
});

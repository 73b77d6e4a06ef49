/**
 * A model-based property: random sequences of saves (the next revision, or
 * any other: stale, repeated, ahead) and loads, through three Redis store
 * objects over one prefix (as three processes, each planning from what it
 * last saved or loaded), answer exactly as the in-memory store does: the same
 * saves accepted, the same ones refused with the same code, and every load
 * the same record. The envelopes are a real run's, recorded once.
 *
 * The seed is printed; re-run a failure with FC_SEED=<seed> (and FC_PATH=<path>).
 */
import fc from 'fast-check';
import { beforeAll, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, runAgent, type AgentRunEnvelope, type AgentRunStore } from 'cairn/agent';
import { createRedisOpsStore, type RedisOpsStore } from 'cairn/ops/redis';
import { createLedger, createMockModel, ledgerTool } from 'cairn/testing';
import { printedSeed } from '../support/fc-seed.js';
import { describeRedis } from './redis-env.js';

const NUM_RUNS = 25;
const OBJECTS = 3;

type Op = { kind: 'save'; pick: number; next: boolean; via: number } | { kind: 'load'; via: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('save' as const), pick: fc.nat(), next: fc.boolean(), via: fc.nat(OBJECTS - 1) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('load' as const), via: fc.nat(OBJECTS - 1) }) },
);

/** What a call came to: the code it was refused with, or the record a load read (as JSON), or 'ok'. */
async function outcome(work: () => Promise<unknown>): Promise<string> {
  try {
    const value = await work();
    return value === undefined ? 'ok' : JSON.stringify(value);
  } catch (error) {
    return `refused: ${(error as { code?: string }).code ?? String(error)}`;
  }
}

describeRedis('redis store, model-based', (env) => {
  let envelopes: AgentRunEnvelope[] = [];

  beforeAll(async () => {
    // Three charges and an answer: envelopes whose transcript and receipts grow, then settle.
    const recorded: AgentRunEnvelope[] = [];
    const recorder: AgentRunStore = {
      load: async () => undefined,
      save: async (envelope) => {
        recorded.push(structuredClone(envelope));
      },
    };
    let turn = 0;
    const result = await runAgent({
      model: createMockModel({ strict: false, responses: [() => (++turn <= 3 ? { toolCalls: [{ toolName: 'charge', toolCallId: `c${turn}` }] } : { text: 'Done.' })] }),
      prompt: 'Charge three times.',
      session: { store: recorder, runId: 'prop', scope: 'tenant-a' },
      tools: { charge: ledgerTool(createLedger(), 'charge') },
    });
    expect(result.status).toBe('completed');
    envelopes = recorded;
  });

  it('answers every save and load as the in-memory store does, through three store objects', async () => {
    const seed = printedSeed('redis model-based property');
    const path = process.env.FC_PATH;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 30 }), async (ops) => {
        const keyPrefix = env.newPrefix();
        const objects: RedisOpsStore[] = Array.from({ length: OBJECTS }, () => createRedisOpsStore({ url: env.url, keyPrefix }));
        const model = createInMemoryAgentRunStore();
        let stored = 0;
        try {
          for (const step of ops) {
            const redis = objects[step.via]!.agentRuns;
            if (step.kind === 'load') {
              const want = await outcome(() => model.load('prop', { scope: 'tenant-a' }));
              expect(await outcome(() => redis.load('prop', { scope: 'tenant-a' }))).toBe(want);
              continue;
            }
            // Mostly the next revision, which a live executor saves; otherwise any recorded one.
            const index = step.next ? Math.min(stored, envelopes.length - 1) : step.pick % envelopes.length;
            const envelope = envelopes[index]!;
            const want = await outcome(() => model.save(structuredClone(envelope)));
            expect(await outcome(() => redis.save(structuredClone(envelope))), `save of revision ${envelope.revision} after ${stored}`).toBe(want);
            if (want === 'ok') stored = envelope.revision;
          }
          // And every object reads what the model holds at the end.
          const last = await outcome(() => model.load('prop'));
          for (const o of objects) expect(await outcome(() => o.agentRuns.load('prop'))).toBe(last);
        } finally {
          for (const o of objects) await o.close();
        }
      }),
      { numRuns: NUM_RUNS, seed, ...(path ? { path } : {}) },
    );
  });
});

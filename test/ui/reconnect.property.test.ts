/**
 * Reconnects at random cursors, with duplicated and reordered frames: the
 * client's state ends equal to the state folded from the journal in order,
 * each frame applied exactly once.
 *
 * The frames come from a real run of two legs (a tool loop long enough to
 * cross the 9 -> 10 and 99 -> 100 seq boundaries, suspended on an approval,
 * then resumed), and each reconnect is a real resumeAgentStreamResponse.
 * Re-run a failure with FC_SEED=<seed> (and FC_PATH=<path>).
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeStreamAgent, streamAgent, type AgentTools } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import {
  agentStateFromParts, createInMemoryAgentStreamJournal, resumeAgentStreamResponse, toAgentStreamResponse,
  type AgentStreamJournal, type AgentUiState,
} from 'cairn/ui';
import { printedSeed } from '../support/fc-seed.js';
import { parseSse, readAll } from './helpers.js';

const LOOP_STEPS = 20;
const NUM_RUNS = Number(process.env.CAIRN_UI_PROPERTY_RUNS ?? 150);

const tools: AgentTools = {
  step: { description: 'One step.', parameters: { type: 'object', properties: { n: { type: 'number' } } }, execute: ({ n }: { n: number }) => `step ${n}` },
  ship: { description: 'Ships.', parameters: { type: 'object', properties: {} }, needsApproval: true, execute: () => 'shipped' },
};

let journal: AgentStreamJournal;
let total = 0;
let reference: AgentUiState;

beforeAll(async () => {
  journal = createInMemoryAgentStreamJournal();
  const runs = createInMemoryAgentRunStore();
  const session = { store: runs, runId: 'loop', scope: 's' };
  const responses = [
    ...Array.from({ length: LOOP_STEPS }, (_, n) => ({ text: `Step ${n} of the loop. `, chunks: [`Step ${n} `, 'of the ', 'loop. '], toolCalls: [{ toolName: 'step', args: { n }, toolCallId: `s${n}` }] })),
    { toolCalls: [{ toolName: 'ship', toolCallId: 'ship-1' }] },
    { text: 'All shipped.', chunks: ['All ', 'shipped.'] },
  ];
  const model = createMockModel({ responses });
  const options = { model, prompt: 'Loop, then ship.', tools, maxSteps: LOOP_STEPS + 4 };
  const first = await readAll(toAgentStreamResponse(streamAgent({ ...options, session }), { runId: 'loop', store: journal, scope: 's' }));
  const approval = agentStateFromParts(undefined, first.map((f) => f.data)).pendingApprovals[0]!;
  await readAll(toAgentStreamResponse(resumeStreamAgent({
    ...options, session, approvalResponses: [{ approvalId: approval.approvalId, token: approval.token, approved: true }],
  }), { runId: 'loop', store: journal, scope: 's' }));
  const all = await journal.read('loop', 0, 10_000);
  total = all.length;
  reference = agentStateFromParts(undefined, all.map((f) => JSON.parse(f.body)));
});

describe('reconnects, duplicates and reordering', () => {
  it('the run crosses the boundaries the property aims at', () => {
    expect(total).toBeGreaterThan(110);
    expect(reference).toMatchObject({ status: 'completed', output: 'All shipped.', seq: total, early: [] });
  });

  /** One connection: where the client asks from, how much of the response it reads, and how that arrives. */
  const connection = fc.record({
    // A stale cursor (below what the client holds) makes the replay overlap it; the boundaries are picked often.
    back: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 12 }), fc.constantFrom(-1, -2)),
    aim: fc.option(fc.constantFrom(9, 10, 99, 100), { nil: undefined }),
    read: fc.integer({ min: 0, max: 60 }),
    duplicates: fc.array(fc.nat(), { maxLength: 6 }),
    swaps: fc.array(fc.nat(), { maxLength: 6 }),
  });

  it(`applies every frame exactly once, whatever the reconnects (${NUM_RUNS} runs)`, async () => {
    const seed = printedSeed('reconnect property');
    const path = process.env.FC_PATH;
    await fc.assert(
      fc.asyncProperty(fc.array(connection, { minLength: 1, maxLength: 12 }), async (connections) => {
        let state = agentStateFromParts(undefined, []);
        const fed: number[] = [];
        for (const c of connections) {
          // Aim at a boundary when the client is past it (a cursor it could have saved), else step back from where it is.
          const cursor = c.aim !== undefined && c.aim <= state.seq ? c.aim : Math.max(0, state.seq - Math.max(0, c.back));
          const frames = parseSse(await (await resumeAgentStreamResponse({ store: journal, streamId: 'loop', scope: 's', cursor })).text());
          expect(frames[0]?.data.seq ?? cursor + 1).toBe(cursor + 1);
          // The connection drops after `read` frames; some arrive twice, some swapped with the next.
          const got = frames.slice(0, c.read).map((f) => f.data);
          for (const d of c.duplicates) if (got.length > 0) got.splice(d % got.length, 0, got[d % got.length]);
          for (const s of c.swaps) {
            if (got.length < 2) break;
            const i = s % (got.length - 1);
            [got[i], got[i + 1]] = [got[i + 1], got[i]];
          }
          state = agentStateFromParts(state, got);
          fed.push(...got.map((f) => f.seq));
        }
        // The last reconnect reads to the end, from what the client applied.
        const rest = parseSse(await (await resumeAgentStreamResponse({ store: journal, streamId: 'loop', scope: 's', cursor: state.seq })).text());
        state = agentStateFromParts(state, rest.map((f) => f.data));
        expect(state).toEqual(reference);
      }),
      { numRuns: NUM_RUNS, seed, ...(path ? { path } : {}) },
    );
  });

  it('holds an early frame until the gap fills, and drops a duplicate or a stale one without change', async () => {
    const data = (await journal.read('loop', 0, 10_000)).map((f) => JSON.parse(f.body));
    const upTo = (n: number) => agentStateFromParts(undefined, data.slice(0, n));
    // 10 before 9, then 9 again, then 11: the same as 1..11 in order.
    const shuffled = agentStateFromParts(upTo(8), [data[9], data[8], data[8], data[10]]);
    expect(shuffled).toEqual(upTo(11));
    const early = agentStateFromParts(upTo(98), [data[99]]);
    expect(early.seq).toBe(98);
    expect(early.early.map((f) => f.seq)).toEqual([100]);
    expect(agentStateFromParts(early, [data[98]])).toEqual(upTo(100));
    const at = upTo(100);
    expect(agentStateFromParts(at, [data[0], data[99], data[50]])).toBe(at);
  });
});

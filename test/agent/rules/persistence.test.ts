/**
 * Rule 7 (persistence): a store whose save rejects makes the run resolve to a
 * failed result with code persistence_failed, whichever save it is; the run
 * never reports completion before its terminal write succeeded, and a
 * rejected write stops further execution.
 */
import { describe, expect, it } from 'vitest';
import { resumeAgent, runAgent, streamAgent, type AgentRunEnvelope, type AgentTool, type JsonValue, type ResumeOptions } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { collect, countingTool, fixedDeps, recordingStore } from './helpers.js';

type Answer = { total: number };
const answerSchema: JsonValue = { type: 'object', properties: { total: { type: 'number' } }, required: ['total'] };

function scenario(failOn?: number) {
  const store = recordingStore(failOn === undefined ? {} : { failOn });
  const lookup = countingTool({ price: 20 });
  let verifications = 0;
  let callsAtFailure: number | null = null;
  const model = createMockModel({
    responses: [
      { toolCalls: [{ toolName: 'lookup', args: { item: 'pen' } }] },
      { text: 'It costs 20.' },
      { text: '{"total":20}' },
    ],
  });
  const options = {
    model,
    prompt: 'Price a pen.',
    session: { store, runId: 'persist-1', scope: 's' },
    tools: { lookup: lookup as AgentTool },
    output: { schema: answerSchema, validate: (v: unknown) => v as Answer },
    verify: () => {
      verifications += 1;
      return { status: 'verified' as const };
    },
    deps: fixedDeps(),
  } satisfies ResumeOptions<Answer>;
  // Note how many model calls had been made when the failing save was attempted.
  const save = store.save.bind(store);
  store.save = async (envelope: AgentRunEnvelope) => {
    if (store.attempts() + 1 === failOn) callsAtFailure = model.calls.length;
    return save(envelope);
  };
  return {
    store, model, lookup, options,
    verifications: () => verifications,
    callsAtFailure: () => callsAtFailure,
  };
}

describe('persistence failures', () => {
  it('the scenario completes with a working store', async () => {
    const { options, store } = scenario();
    const result = await runAgent(options);
    expect(result.status).toBe('completed');
    expect(store.attempts()).toBeGreaterThanOrEqual(6);
    expect((await store.load('persist-1'))!.status).toBe('completed');
  });

  it('resolves to a failed result with code persistence_failed whichever save rejects, and never reports completed', async () => {
    const total = await (async () => {
      const s = scenario();
      await runAgent(s.options);
      return s.store.attempts();
    })();
    for (let n = 1; n <= total; n += 1) {
      const { options, store } = scenario(n);
      const result = await runAgent(options);
      expect(result.status, `save #${n} of ${total} rejected`).toBe('failed');
      if (result.status !== 'failed') continue;
      expect(result.error.code, `save #${n}`).toBe('persistence_failed');
      const stored = await store.load('persist-1');
      expect(stored?.status, `save #${n}`).not.toBe('completed');
      expect(store.saved.every((json) => (JSON.parse(json) as AgentRunEnvelope).status !== 'completed')).toBe(true);
    }
  });

  it('stops further execution after the rejected write: no later save, model call, effect or verification', async () => {
    const total = await (async () => {
      const s = scenario();
      await runAgent(s.options);
      return s.store.attempts();
    })();
    for (let n = 1; n <= total; n += 1) {
      const s = scenario(n);
      const result = await runAgent(s.options);
      expect(result.status).toBe('failed');
      expect(s.store.attempts(), `save #${n}: saves attempted after the rejected one`).toBe(n);
      expect(s.model.calls.length, `save #${n}: model calls after the rejected save`).toBe(s.callsAtFailure());
    }
  });

  it('resolves a resume to persistence_failed whichever of its saves rejects, and never runs the approved call twice', async () => {
    const setup = (failOn?: number) => {
      const store = recordingStore(failOn === undefined ? {} : { failOn });
      const publish = countingTool('published', { needsApproval: true });
      const model = createMockModel({ responses: [{ toolCalls: [{ toolName: 'publish', args: {} }] }, { text: 'Published.' }] });
      const options = {
        model, prompt: 'Publish.', tools: { publish: publish as AgentTool },
        session: { store, runId: 'persist-2', scope: 's' }, deps: fixedDeps(),
      } satisfies ResumeOptions;
      return { store, publish, options };
    };
    const probe = setup();
    const first = await runAgent(probe.options);
    if (first.status !== 'suspended') throw new Error(first.status);
    const firstLeg = probe.store.attempts();
    const verdict = (p: { approvalId: string; token: string }) => [{ approvalId: p.approvalId, token: p.token, approved: true }];
    expect((await resumeAgent({ ...probe.options, approvalResponses: verdict(first.pendingApprovals[0]!) })).status).toBe('completed');
    const resumeLeg = probe.store.attempts() - firstLeg;
    expect(resumeLeg).toBeGreaterThan(1);

    for (let n = 1; n <= resumeLeg; n += 1) {
      const s = setup(firstLeg + n);
      const suspended = await runAgent(s.options);
      if (suspended.status !== 'suspended') throw new Error(suspended.status);
      const result = await resumeAgent({ ...s.options, approvalResponses: verdict(suspended.pendingApprovals[0]!) });
      expect(result.status, `resume save #${n} of ${resumeLeg} rejected`).toBe('failed');
      if (result.status === 'failed') expect(result.error.code, `resume save #${n}`).toBe('persistence_failed');
      expect(s.store.attempts(), `resume save #${n}: saves after the rejected one`).toBe(firstLeg + n);
      expect(s.publish.runs.length, `resume save #${n}`).toBeLessThanOrEqual(1);
      expect((await s.store.load('persist-2'))!.status).not.toBe('completed');
    }
  });

  it('does not run the tool when its executing receipt could not be written', async () => {
    // Find the save that writes the executing receipt, then fail exactly that one.
    const probe = scenario();
    await runAgent(probe.options);
    const executingAt = probe.store.handed.findIndex((e) => Object.values(e.receipts).some((r) => r.status === 'executing')) + 1;
    expect(executingAt).toBeGreaterThan(0);
    const s = scenario(executingAt);
    const result = await runAgent(s.options);
    expect(result.status).toBe('failed');
    if (result.status === 'failed') expect(result.error.code).toBe('persistence_failed');
    expect(s.lookup.runs).toHaveLength(0);
  });

  it('ends a stream with a failed result (never a completed one) when the terminal write rejects', async () => {
    const total = await (async () => {
      const s = scenario();
      await runAgent(s.options);
      return s.store.attempts();
    })();
    const s = scenario(total);
    const events = await collect(streamAgent(s.options).events);
    const results = events.filter((e) => e.type === 'result');
    expect(results).toHaveLength(1);
    const result = (results[0] as Extract<(typeof events)[number], { type: 'result' }>).result;
    expect(result.status).toBe('failed');
    if (result.status === 'failed') expect(result.error.code).toBe('persistence_failed');
    expect(s.verifications()).toBe(1);
  });
});

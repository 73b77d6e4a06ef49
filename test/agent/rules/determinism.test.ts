/**
 * Rule 7 (determinism and the envelope): with a scripted model, a fixed clock
 * and injected ids, a run stores the same bytes every time, at every
 * revision; revisions count up by one; the envelope is plain JSON of a known
 * shape.
 */
import { describe, expect, it } from 'vitest';
import {
  resumeAgent, runAgent, type AgentRunEnvelope, type AgentTool, type JsonValue, type ResumeOptions,
} from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import { countingTool, fixedDeps, recordingStore } from './helpers.js';

type Answer = { total: number };
const answerSchema: JsonValue = { type: 'object', properties: { total: { type: 'number' } }, required: ['total'] };

/** A run that looks something up, suspends on an approval, is resumed, finalizes as JSON and is verified. */
async function scriptedRun() {
  const store = recordingStore();
  const lookup = countingTool({ price: 20 }, { toModelOutput: (r: { price: number }) => `price ${r.price}` });
  const buy = countingTool('bought', { needsApproval: true });
  const model = createMockModel({
    responses: [
      { text: 'Looking.', toolCalls: [{ toolName: 'lookup', args: { item: 'pen' } }] },
      { toolCalls: [{ toolName: 'buy', args: { item: 'pen', qty: 2 } }] },
      { text: 'Bought two pens.' },
      { text: '{"total":40}' },
    ],
  });
  const options = {
    model,
    prompt: 'Buy two pens.',
    bindingId: 'det-v1',
    session: { store, runId: 'det-1', scope: 'tenant-a' },
    tools: { lookup: lookup as AgentTool, buy: buy as AgentTool },
    output: { schema: answerSchema, validate: (v: unknown) => v as Answer },
    verify: () => ({ status: 'verified' as const }),
    deps: fixedDeps(),
  } satisfies ResumeOptions<Answer>;
  const first = await runAgent(options);
  const afterFirst = store.saved.length;
  if (first.status !== 'suspended') throw new Error(`expected suspended, got ${first.status}`);
  const p = first.pendingApprovals[0]!;
  const second = await resumeAgent({ ...options, approvalResponses: [{ approvalId: p.approvalId, token: p.token, approved: true }] });
  return { store, first, second, afterFirst, lookup, buy, model };
}

const parse = (json: string) => JSON.parse(json) as AgentRunEnvelope;

describe('determinism', () => {
  it('stores byte-identical envelopes at every revision when the same run is made twice', async () => {
    const a = await scriptedRun();
    const b = await scriptedRun();
    expect(a.second.status).toBe('completed');
    expect(a.buy.runs).toHaveLength(1);
    expect(a.store.saved.length).toBeGreaterThan(4);
    expect(b.store.saved).toHaveLength(a.store.saved.length);
    a.store.saved.forEach((json, i) => expect(b.store.saved[i], `revision ${i + 1}`).toBe(json));
    expect(JSON.stringify(b.first)).toBe(JSON.stringify(a.first));
    expect(JSON.stringify(b.second)).toBe(JSON.stringify(a.second));
    expect(JSON.stringify(b.model.calls)).toBe(JSON.stringify(a.model.calls));
  });

  it('saves revisions 1, 2, 3, ... without gaps, across the run and its resume', async () => {
    const { store } = await scriptedRun();
    expect(store.saved.map((json) => parse(json).revision)).toEqual(store.saved.map((_, i) => i + 1));
    expect(store.attempts()).toBe(store.saved.length);
  });
});

describe('the envelope', () => {
  it('has the kind, version, identity, machine, binding, status and pending fields', async () => {
    const { store, first, afterFirst } = await scriptedRun();
    if (first.status !== 'suspended') return;
    const suspended = parse(store.saved[afterFirst - 1]!);
    expect(suspended).toMatchObject({
      kind: 'cairn-agent-run',
      version: 2,
      runId: 'det-1',
      scope: 'tenant-a',
      revision: afterFirst,
      bindingId: 'det-v1',
      status: 'suspended',
      pendingApprovals: first.pendingApprovals,
      pendingClientCalls: [],
      createdAt: 1000,
      updatedAt: 1000,
    });
    expect(suspended.machine.id).toBe('run');
    expect(Number.isInteger(suspended.machine.version)).toBe(true);
    expect(suspended.binding).toEqual({
      bindingId: 'det-v1',
      model: 'mock:mock-model',
      tools: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      output: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      limits: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      // Each tool's and each limit's own fingerprint, so a changed binding can say which part changed.
      parts: {
        tools: expect.any(Object),
        limits: expect.objectContaining({ maxSteps: expect.stringMatching(/^sha256:/) }),
      },
    });
    expect(suspended.approvalRequestCounts).toEqual({ tool_0: 1 });
    expect(suspended.result).toBeUndefined();

    const last = parse(store.saved.at(-1)!);
    expect(last).toMatchObject({ kind: 'cairn-agent-run', version: 1, status: 'completed', pendingApprovals: [], pendingClientCalls: [] });
    expect(last.machine).toEqual(suspended.machine);
    expect(last.binding).toEqual(suspended.binding);
    expect(last.result).toMatchObject({ status: 'completed', output: { total: 40 } });
  });

  it('is version 2 whenever an approval is pending, and version 1 once the run ended', async () => {
    const { store } = await scriptedRun();
    const envelopes = store.saved.map(parse);
    expect(envelopes.some((e) => e.pendingApprovals.length > 0)).toBe(true);
    for (const e of envelopes) {
      expect([1, 2]).toContain(e.version);
      expect(['running', 'suspended', 'completed', 'stopped', 'failed']).toContain(e.status);
      if (e.pendingApprovals.length > 0) {
        expect(e.version).toBe(2);
        expect(e.status).toBe('suspended');
      }
    }
    expect(envelopes.at(-1)!.version).toBe(1);
  });

  it('is version 2 while an approved call is open after the resume took it up, until its answer is saved', async () => {
    // Spec: "and so is a run stopped while a call is open whose ID the run's approval gate issued a request
    // under, such as a resume that took approved calls up and stopped before it saved their answers".
    const { store, afterFirst } = await scriptedRun();
    const envelopes = store.saved.map(parse);
    const resumeLeg = envelopes.slice(afterFirst);
    const openGated = resumeLeg.filter((e) => {
      const context = (e.snapshot as { context: { batch: string[]; lastTurn: { step: number } | null } }).context;
      return context.batch.length > 0 && context.lastTurn?.step === 1;
    });
    expect(openGated.length).toBeGreaterThan(0);
    for (const e of openGated) expect(e.version, `revision ${e.revision}`).toBe(2);
  });

  it('never stores a suspended status without saying what the run waits for', async () => {
    const { store } = await scriptedRun();
    for (const e of store.saved.map(parse)) {
      if (e.status !== 'suspended') continue;
      expect(e.pendingApprovals.length + e.pendingClientCalls.length, `revision ${e.revision}`).toBeGreaterThan(0);
    }
  });

  it('holds only plain JSON: every envelope (and its snapshot) survives a JSON round trip unchanged', async () => {
    const { store } = await scriptedRun();
    expect(store.handed.length).toBe(store.saved.length);
    for (const envelope of store.handed) {
      expect(JSON.parse(JSON.stringify(envelope.snapshot))).toStrictEqual(envelope.snapshot);
      expect(JSON.parse(JSON.stringify(envelope))).toStrictEqual(envelope);
    }
  });
});

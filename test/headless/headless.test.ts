/**
 * cairn/headless through its public entry points: the report, the outcomes and
 * their exit codes, pending runs and resume, unknown effects, transient
 * failures, drained runs, cost and budgets, onEvent.
 */
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  agentRunLeaseKey, createInMemoryAgentRunStore, type AgentTools,
} from 'cairn/agent';
import {
  doctor, exitCodeFor, HEADLESS_EXIT_CODES, inspectRun, resumeHeadless, runHeadless, type BreakerState, type HeadlessReport,
} from 'cairn/headless';
import { createCrashPlan, createMockModel, type MockTurn } from 'cairn/testing';
import { drainSignallingProvider } from '../support/drain-provider.js';

const deployTools = (log: string[] = []): AgentTools => ({
  deploy: {
    description: 'Deploy the build.',
    parameters: { type: 'object', properties: { env: { type: 'string' } }, required: ['env'] },
    needsApproval: true,
    execute: ({ env }: { env: string }) => {
      log.push(env);
      return { deployed: env };
    },
  },
});

const deployModel = () => createMockModel({
  responses: [{ toolCalls: [{ toolName: 'deploy', args: { env: 'prod' } }] }, { text: 'Deployed to prod.' }],
});

/** Answers by the number of tool results so far, so a fresh copy in a resume picks up where the run is. */
const byToolResults = (turns: MockTurn[]) => createMockModel({
  strict: false,
  responses: [(request) => turns[Math.min(request.messages.filter((m) => m.role === 'tool').length, turns.length - 1)]!],
});

describe('the exit code table', () => {
  it('maps every outcome, and a run that did not complete never exits 0', () => {
    expect(HEADLESS_EXIT_CODES).toEqual({
      completed: 0, failed: 1, usage: 2, pending: 3, stopped: 4, cancelled: 5, limit: 6, busy: 7, doctorError: 8,
    });
    const report = (outcome: HeadlessReport['outcome']) => ({ kind: 'run', outcome }) as HeadlessReport;
    for (const outcome of ['failed', 'pending', 'stopped', 'cancelled', 'limit', 'busy'] as const) {
      expect(exitCodeFor(report(outcome))).toBe(HEADLESS_EXIT_CODES[outcome]);
      expect(exitCodeFor(report(outcome))).not.toBe(0);
    }
    expect(exitCodeFor(report('completed'))).toBe(0);
    expect(exitCodeFor({ kind: 'doctor', ok: false, findings: [{ severity: 'error', code: 'x', message: 'm' }] })).toBe(8);
    expect(exitCodeFor({ kind: 'doctor', ok: true, findings: [{ severity: 'warning', code: 'x', message: 'm' }] })).toBe(0);
    expect(() => exitCodeFor(report('usage' as never))).toThrow(TypeError);
    expect(() => exitCodeFor(null as never)).toThrow(TypeError);
  });
});

describe('quick start', () => {
  it('runs without a key and reports completed (exit 0), under scope headless', async () => {
    const store = createInMemoryAgentRunStore();
    const report = await runHeadless({
      model: createMockModel({ responses: [{ text: 'The build is green.' }] }),
      prompt: 'Check the build.',
      store,
      runId: 'nightly-2026-10-11',
    });
    expect(report).toMatchObject({
      kind: 'run', outcome: 'completed', status: 'completed', runId: 'nightly-2026-10-11', output: 'The build is green.',
      pending: [], warnings: [], cost: { usd: 0, complete: true }, steps: 1,
    });
    expect(report.usage.totalTokens).toBeGreaterThan(0);
    expect(exitCodeFor(report)).toBe(0);
    expect((await store.load('nightly-2026-10-11', { scope: 'headless' }))?.status).toBe('completed');
    // The report is plain JSON.
    expect(JSON.parse(JSON.stringify(report))).toEqual(report);
  });

  it('takes the same options the doctor reads, and the model gets them', async () => {
    const options = {
      model: createMockModel({ responses: [{ text: 'ok' }] }),
      prompt: 'x',
      store: createInMemoryAgentRunStore(),
      temperature: 0.2,
      effort: 'low' as const,
      budget: { usd: 1 },
    };
    expect((await doctor(options)).findings.filter((f) => f.severity === 'error')).toEqual([]);
    const report = await runHeadless(options);
    expect(report.outcome).toBe('completed');
    expect(options.model.calls[0]!.settings).toEqual({ temperature: 0.2, effort: 'low' });
  });

  it('generates a run id when none is given', async () => {
    const store = createInMemoryAgentRunStore();
    const a = await runHeadless({ model: createMockModel({ responses: [{ text: 'a' }] }), prompt: 'x', store });
    const b = await runHeadless({ model: createMockModel({ responses: [{ text: 'b' }] }), prompt: 'x', store });
    expect(a.runId).toMatch(/^\S{8,}$/);
    expect(b.runId).not.toBe(a.runId);
    expect((await store.load(a.runId, { scope: 'headless' }))?.status).toBe('completed');
  });
});

describe('pending runs and resume', () => {
  it('the deploy example: pending (3), inspected, approved, completed (0)', async () => {
    const store = createInMemoryAgentRunStore();
    const model = deployModel();
    const log: string[] = [];
    const tools = deployTools(log);
    const first = await runHeadless({ model, prompt: 'Deploy.', tools, store, runId: 'deploy-7' });
    expect(first.outcome).toBe('pending');
    expect(exitCodeFor(first)).toBe(3);
    expect(first.pending).toEqual([expect.objectContaining({
      kind: 'approval', resumeWith: 'approvalResponses', toolName: 'deploy', args: { env: 'prod' },
    })]);

    const waiting = await inspectRun(store, 'deploy-7');
    expect(waiting.pending).toEqual(first.pending);
    const approvalResponses = waiting.pending.flatMap((action) =>
      action.kind === 'approval' ? [{ approvalId: action.approvalId, approved: true, token: action.token }] : []);
    const done = await resumeHeadless({ model, tools, store, runId: 'deploy-7', approvalResponses });
    expect([done.outcome, done.output, exitCodeFor(done)]).toEqual(['completed', 'Deployed to prod.', 0]);
    expect(log).toEqual(['prod']);
  });

  it('a changed binding fails the resume (exit 1) and touches nothing', async () => {
    const store = createInMemoryAgentRunStore();
    const tools = deployTools();
    await runHeadless({ model: deployModel(), prompt: 'Deploy.', tools, store, runId: 'r' });
    const before = await store.load('r');
    const changed = await resumeHeadless({
      model: createMockModel({ modelId: 'another-model', responses: [{ text: 'x' }] }), tools, store, runId: 'r',
    });
    expect(changed.outcome).toBe('failed');
    expect(changed.error?.code).toBe('binding_changed');
    expect(exitCodeFor(changed)).toBe(1);
    expect(await store.load('r')).toEqual(before);
  });

  it('verdicts that match nothing are ignored; a resume that answers nothing stays pending (3) and writes nothing', async () => {
    const store = createInMemoryAgentRunStore();
    const tools = deployTools();
    const model = deployModel();
    await runHeadless({ model, prompt: 'Deploy.', tools, store, runId: 'r' });
    const before = await store.load('r');
    const again = await resumeHeadless({
      model, tools, store, runId: 'r', approvalResponses: [{ approvalId: 'nope', approved: true, token: 't' }], retryToolCallIds: ['nothing'],
    });
    expect(again.outcome).toBe('pending');
    expect(exitCodeFor(again)).toBe(3);
    expect(again.warnings.map((w) => w.code)).toContain('answer-ignored');
    expect(await store.load('r')).toEqual(before);
    expect(model.calls).toHaveLength(1);
  });

  it('a client result for a call the run does not wait on fails the leg with a TypeError before any write', async () => {
    const store = createInMemoryAgentRunStore();
    const tools = deployTools();
    const model = deployModel();
    await runHeadless({ model, prompt: 'Deploy.', tools, store, runId: 'r' });
    const before = await store.load('r');
    const bad = await resumeHeadless({ model, tools, store, runId: 'r', clientToolResults: [{ toolCallId: 'ghost', output: 1 }] });
    expect(bad.outcome).toBe('failed');
    expect(bad.error?.name).toBe('TypeError');
    expect(await store.load('r')).toEqual(before);
  });

  it('a resume of a run that ended returns its stored result and ignores answers', async () => {
    const store = createInMemoryAgentRunStore();
    const model = createMockModel({ responses: [{ text: 'Done.' }] });
    await runHeadless({ model, prompt: 'x', store, runId: 'r' });
    const again = await resumeHeadless({ model, store, runId: 'r', retryToolCallIds: ['x'], retryFailed: true });
    expect(again).toMatchObject({ outcome: 'completed', output: 'Done.' });
    expect(model.calls).toHaveLength(1);
  });

  it('inspectRun rejects an unknown run id with a TypeError, and reads nothing of another scope', async () => {
    const store = createInMemoryAgentRunStore();
    await expect(inspectRun(store, 'missing')).rejects.toThrow(TypeError);
    await runHeadless({ model: createMockModel({ responses: [{ text: 'secret answer' }] }), prompt: 'x', store, runId: 'r', scope: 'tenant-a' });
    await expect(inspectRun(store, 'r')).rejects.toMatchObject({ code: 'scope_mismatch' });
    expect((await inspectRun(store, 'r', { scope: 'tenant-a' })).output).toBe('secret answer');
  });
});

describe('unknown effects', () => {
  /** A run whose charge started (its executing receipt is durable) and whose outcome was never recorded. */
  async function stuckRun(store: ReturnType<typeof createInMemoryAgentRunStore>, charges: string[]) {
    const crash = createCrashPlan({ at: { kind: 'tool', index: 1, when: 'after' } });
    const tools: AgentTools = {
      charge: { description: 'Charge the order once.', parameters: { type: 'object', properties: {} }, execute: () => { charges.push('charged'); return { charged: true }; } },
    };
    const outcome = await crash.race(runHeadless({
      model: crash.wrapModel(byToolResults([{ toolCalls: [{ toolName: 'charge', args: {} }] }, { text: 'Charged.' }])),
      prompt: 'Charge order 7.',
      tools: crash.wrapTools(tools),
      store: crash.wrapStore(store),
      runId: 'order-7',
    }));
    expect(outcome.crashed).toBe(true);
    return tools;
  }

  it('inspectRun lists the call beside the pending resume; a plain resume stops (3) and writes nothing', async () => {
    const store = createInMemoryAgentRunStore();
    const charges: string[] = [];
    const tools = await stuckRun(store, charges);
    const stuck = await inspectRun(store, 'order-7');
    expect(stuck.status).toBe('in-progress');
    expect(stuck.outcome).toBe('pending');
    expect(stuck.pending).toEqual([
      { kind: 'resume', resumeWith: null, phase: 'running' },
      expect.objectContaining({ kind: 'unknown-effect', toolName: 'charge', resumeWith: ['retryToolCallIds', 'reconciledToolResults'] }),
    ]);
    const before = await store.load('order-7');
    const model = byToolResults([{ toolCalls: [{ toolName: 'charge', args: {} }] }, { text: 'Charged.' }]);
    const plain = await resumeHeadless({ model, tools, store, runId: 'order-7' });
    expect(plain).toMatchObject({ outcome: 'pending', reason: 'tool-reconciliation-required' });
    expect(exitCodeFor(plain)).toBe(3);
    expect(plain.pending.map((p) => p.kind)).toEqual(['unknown-effect']);
    expect(await store.load('order-7')).toEqual(before);
    expect(charges).toEqual(['charged']);
  });

  it('reconciledToolResults records what landed (the call never runs again); retryToolCallIds runs it once more', async () => {
    for (const answer of ['reconcile', 'retry'] as const) {
      const store = createInMemoryAgentRunStore();
      const charges: string[] = [];
      const tools = await stuckRun(store, charges);
      const calls = (await inspectRun(store, 'order-7')).pending.flatMap((a) => (a.kind === 'unknown-effect' ? [a.toolCallId] : []));
      const model = byToolResults([{ toolCalls: [{ toolName: 'charge', args: {} }] }, { text: 'Charged.' }]);
      const done = answer === 'reconcile'
        ? await resumeHeadless({ model, tools, store, runId: 'order-7', reconciledToolResults: calls.map((toolCallId) => ({ toolCallId, output: { charged: true } })) })
        : await resumeHeadless({ model, tools, store, runId: 'order-7', retryToolCallIds: calls });
      expect([done.outcome, exitCodeFor(done)]).toEqual(['completed', 0]);
      expect(charges).toEqual(answer === 'reconcile' ? ['charged'] : ['charged', 'charged']);
    }
  });
});

describe('a run that failed in transit', () => {
  it('an open breaker fails the model call before it is sent; retry says how to go on; retryFailed completes', async () => {
    const store = createInMemoryAgentRunStore();
    const model = createMockModel({ responses: [{ text: 'Summary ready.' }] });
    const outage = { get: () => ({ failures: 5, cooldownUntil: Date.now() + 60_000 }), set: () => {} };
    const first = await runHeadless({ model, prompt: 'Summarize ticket 9.', store, runId: 'ticket-9', deps: { breakerStore: outage } });
    expect(first.outcome).toBe('failed');
    // Exactly the spec's shape: what failed, where, and how to go on.
    expect(first.retry).toEqual({ cause: 'model-call', phase: 'running', resumeWith: 'retryFailed' });
    expect(first.error?.code).toBe('breaker_open');
    expect(exitCodeFor(first)).toBe(1);
    expect(model.calls).toHaveLength(0);
    expect((await inspectRun(store, 'ticket-9')).retry).toEqual(first.retry);

    const retried = await resumeHeadless({ model, store, runId: 'ticket-9', retryFailed: true });
    expect([retried.outcome, retried.output, exitCodeFor(retried)]).toEqual(['completed', 'Summary ready.', 0]);
  });

  it('the breaker opens after the threshold of transient failures in a row and closes on a success', async () => {
    const states = new Map<string, BreakerState>();
    const breakerStore = { get: (key: string) => states.get(key), set: (key: string, state: BreakerState) => void states.set(key, state) };
    const clock = { now: () => 1_000 };
    const failing = () => createMockModel({ responses: [{ error: { status: 503, message: 'down' } }] });
    for (let i = 1; i <= 2; i++) {
      const report = await runHeadless({
        model: failing(), maxRetries: 0, prompt: 'x', store: createInMemoryAgentRunStore(), deps: { breakerStore, clock, breaker: { threshold: 2, cooldownMs: 500 } },
      });
      expect([report.retry?.cause, report.error?.code]).toEqual(['model-call', 'model_call_failed']);
    }
    expect(states.get('mock:mock-model')).toEqual({ failures: 2, cooldownUntil: 1_500 });
    const model = createMockModel({ responses: [{ text: 'ok' }] });
    const blocked = await runHeadless({ model, prompt: 'x', store: createInMemoryAgentRunStore(), deps: { breakerStore, clock } });
    expect([blocked.retry?.cause, blocked.error?.code]).toEqual(['model-call', 'breaker_open']);
    expect(model.calls).toHaveLength(0);
    const later = { now: () => 2_000 };
    const ok = await runHeadless({ model, prompt: 'x', store: createInMemoryAgentRunStore(), deps: { breakerStore, clock: later } });
    expect(ok.outcome).toBe('completed');
    expect(states.get('mock:mock-model')).toEqual({ failures: 0 });
  });

  it('a transport timeout keeps its retry and reports limit (6)', async () => {
    const report = await runHeadless({
      model: createMockModel({ responses: [{ error: { status: 408, message: 'Request timeout' } }] }),
      maxRetries: 0,
      prompt: 'x',
      store: createInMemoryAgentRunStore(),
    });
    expect(report.outcome).toBe('limit');
    expect(report.retry).toEqual({ cause: 'model-call', phase: 'running', resumeWith: 'retryFailed' });
    expect(exitCodeFor(report)).toBe(6);
  });

  it('retryFailed for a failure that was not transient fails the leg (exit 1) and writes nothing', async () => {
    const store = createInMemoryAgentRunStore();
    const model = createMockModel({ responses: [{ error: { status: 400, message: 'Bad request' } }] });
    const first = await runHeadless({ model, prompt: 'x', store, runId: 'r' });
    expect(first.retry).toBeUndefined();
    const before = await store.load('r');
    const again = await resumeHeadless({ model, store, runId: 'r', retryFailed: true });
    expect([again.outcome, again.error?.name, exitCodeFor(again)]).toEqual(['failed', 'TypeError', 1]);
    expect(await store.load('r')).toEqual(before);
  });
});

describe('a drained run', () => {
  it('reports pending (3) with reason drained and a pending resume; a plain resume on another executor completes', async () => {
    let now = 1_000_000;
    const clock = { now: () => now };
    const { provider, drainDelivered } = drainSignallingProvider(clock);
    const store = createInMemoryAgentRunStore([], { clock, leases: provider });
    let ran = 0;
    const tools: AgentTools = {
      work: {
        parameters: { type: 'object' },
        execute: async () => {
          ran++;
          if (ran === 1) {
            await provider.requestDrain(agentRunLeaseKey({ runId: 'job', scope: 'headless' }));
            await drainDelivered;
          }
          return 'worked';
        },
      },
    };
    const leg = (owner: string) => ({
      model: byToolResults([{ toolCalls: [{ toolName: 'work', args: {} }] }, { toolCalls: [{ toolName: 'work', args: {} }] }, { text: 'all done' }]),
      tools, store, runId: 'job', lease: { provider, owner, ttlMs: 60 }, deps: { clock },
    });
    const drained = await runHeadless({ ...leg('worker-1'), prompt: 'x' });
    expect(drained).toMatchObject({ outcome: 'pending', status: 'drained', reason: 'drained' });
    expect(drained.pending).toEqual([{ kind: 'resume', resumeWith: null, phase: 'running' }]);
    expect(exitCodeFor(drained)).toBe(3);
    expect((await inspectRun(store, 'job')).pending).toEqual(drained.pending);
    now += 1;
    const done = await resumeHeadless(leg('worker-2'));
    expect([done.outcome, done.output]).toEqual(['completed', 'all done']);
    expect(ran).toBe(2);
  });
});

describe('cost and budgets', () => {
  const acme = (turns: MockTurn[]) => {
    const model = createMockModel({ responses: turns });
    return Object.assign(Object.create(model), { provider: 'acme', modelId: 'acme-1' }) as typeof model;
  };

  it('an unpriced model leaves the cost incomplete', async () => {
    const report = await runHeadless({ model: acme([{ text: 'hi' }]), prompt: 'x', store: createInMemoryAgentRunStore() });
    expect(report.cost).toEqual({ usd: 0, complete: false });
    expect(report.warnings).toEqual([]);
  });

  it('deps.priceProvider prices the run', async () => {
    const report = await runHeadless({
      model: acme([{ text: 'hi', usage: { inputTokens: 1000, outputTokens: 500 } }]),
      prompt: 'x',
      store: createInMemoryAgentRunStore(),
      deps: { priceProvider: ({ usage }) => usage.inputTokens * 1e-6 + usage.outputTokens * 2e-6 },
    });
    expect(report.cost.complete).toBe(true);
    expect(report.cost.usd).toBeCloseTo(0.002, 9);
  });

  it('a price provider that throws leaves the cost incomplete; the run itself is not touched', async () => {
    const report = await runHeadless({
      model: acme([{ text: 'hi' }]), prompt: 'x', store: createInMemoryAgentRunStore(),
      deps: { priceProvider: () => { throw new Error('pricing service down'); } },
    });
    expect(report).toMatchObject({ outcome: 'completed', cost: { usd: 0, complete: false } });
  });

  it('a USD budget with an unpriced model warns and runs; unknownPrice reject refuses it before any write', async () => {
    const warned = await runHeadless({ model: acme([{ text: 'hi' }]), prompt: 'x', store: createInMemoryAgentRunStore(), budget: { usd: 1 } });
    expect(warned.outcome).toBe('completed');
    expect(warned.warnings.map((w) => w.code)).toEqual(['unpriced-model']);

    const store = createInMemoryAgentRunStore();
    const model = acme([{ text: 'hi' }]);
    const refused = await runHeadless({ model, prompt: 'x', store, runId: 'r', budget: { usd: 1, unknownPrice: 'reject' } });
    expect(refused).toMatchObject({ outcome: 'failed', error: { code: 'unpriced_model' } });
    expect(exitCodeFor(refused)).toBe(1);
    expect(await store.load('r')).toBeUndefined();
    expect(model.calls).toHaveLength(0);
  });

  it('a spent USD budget refuses the next model call: outcome limit (6)', async () => {
    const turn: MockTurn = { toolCalls: [{ toolName: 'look', args: {} }], usage: { inputTokens: 1000, outputTokens: 0 } };
    const model = acme([turn, turn, turn, { text: 'done' }]);
    const report = await runHeadless({
      model,
      prompt: 'x',
      tools: { look: { parameters: { type: 'object' }, execute: () => 'seen' } },
      store: createInMemoryAgentRunStore(),
      budget: { usd: 0.0015 },
      deps: { priceProvider: ({ usage }) => usage.inputTokens * 1e-6 },
    });
    expect(report).toMatchObject({ outcome: 'limit', error: { code: 'budget_exceeded' } });
    expect(exitCodeFor(report)).toBe(6);
    expect(model.calls).toHaveLength(2);
  });

  it('a token budget counts across legs', async () => {
    const store = createInMemoryAgentRunStore();
    const turn = (text: string): MockTurn => ({ toolCalls: [{ toolName: 'gate', args: { text } }], usage: { inputTokens: 60, outputTokens: 0 } });
    const tools: AgentTools = {
      gate: { parameters: { type: 'object' }, needsApproval: ({ text }: { text: string }) => text === 'a', execute: () => 'ok' },
    };
    const model = byToolResults([turn('a'), turn('b'), { text: 'done' }]);
    const first = await runHeadless({ model, prompt: 'x', tools, store, runId: 'r', budget: { tokens: 100 } });
    expect(first.outcome).toBe('pending');
    const approvalResponses = first.pending.flatMap((a) => (a.kind === 'approval' ? [{ approvalId: a.approvalId, token: a.token, approved: true }] : []));
    const second = await resumeHeadless({ model, tools, store, runId: 'r', approvalResponses, budget: { tokens: 100 } });
    // 60 tokens before this leg, 60 more in its first call: its second call is refused.
    expect(second).toMatchObject({ outcome: 'limit', error: { code: 'budget_exceeded' } });
  });

  it('a malformed budget is refused before anything is written', async () => {
    const store = createInMemoryAgentRunStore();
    const report = await runHeadless({ model: createMockModel({ responses: [{ text: 'x' }] }), prompt: 'x', store, runId: 'r', budget: { usd: -1 } });
    expect(report).toMatchObject({ outcome: 'failed', error: { code: 'invalid_options' } });
    expect(await store.load('r')).toBeUndefined();
  });
});

describe('onEvent', () => {
  it('receives every event of the leg as it happens', async () => {
    const types: string[] = [];
    const report = await runHeadless({
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'look', args: {} }] }, { text: 'done' }] }),
      prompt: 'x',
      tools: { look: { parameters: { type: 'object' }, execute: () => 'seen' } },
      store: createInMemoryAgentRunStore(),
      onEvent: (event) => types.push(event.type),
    });
    expect(report.outcome).toBe('completed');
    expect(types[0]).toBe('run-start');
    expect(types).toContain('tool-call-start');
    expect(types).toContain('tool-call-end');
    expect(types.at(-1)).toBe('result');
  });

  it('a throwing onEvent ends the leg, which rejects with that error', async () => {
    const boom = new Error('listener broke');
    const tool = { calls: 0 };
    await expect(runHeadless({
      model: createMockModel({ strict: false, responses: [{ toolCalls: [{ toolName: 'look', args: {} }] }] }),
      prompt: 'x',
      tools: { look: { parameters: { type: 'object' }, execute: () => ++tool.calls } },
      store: createInMemoryAgentRunStore(),
      onEvent: (event) => { if (event.type === 'step-start') throw boom; },
    })).rejects.toBe(boom);
  });
});

describe('project instructions and skills in a run', () => {
  function repo() {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'cairn-headless-')));
    mkdirSync(join(root, '.git'));
    writeFileSync(join(root, 'AGENTS.md'), 'Root rule: run the tests.\n');
    mkdirSync(join(root, 'packages', 'app'), { recursive: true });
    writeFileSync(join(root, 'packages', 'app', 'CLAUDE.md'), 'App rule: use pnpm.\n');
    const skills = join(root, 'skills');
    mkdirSync(join(skills, 'release'), { recursive: true });
    writeFileSync(join(skills, 'release', 'SKILL.md'), '---\nname: Release\ndescription: How to cut a release.\n---\nTag, then publish.\n');
    writeFileSync(join(skills, 'release', 'checklist.md'), '1. bump\n2. tag\n');
    writeFileSync(join(root, 'secret.txt'), 'TOP-SECRET-VALUE');
    return { root, app: join(root, 'packages', 'app'), skills };
  }

  it('your instructions first, then the project files outermost first, then the skills list, in one system message', async () => {
    const { app, skills } = repo();
    const model = createMockModel({ responses: [{ text: 'ok' }] });
    const report = await runHeadless({ model, system: 'Be brief.', prompt: 'Go.', store: createInMemoryAgentRunStore(), projectDir: app, skills });
    expect(report.outcome).toBe('completed');
    const [system, user] = model.calls[0]!.messages;
    expect(system!.role).toBe('system');
    const text = system!.content as string;
    const order = ['Be brief.', 'Root rule: run the tests.', 'App rule: use pnpm.', '<available_skills>'].map((s) => text.indexOf(s));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(user).toEqual({ role: 'user', content: 'Go.' });
    expect(model.calls[0]!.tools.map((t) => t.name).sort()).toEqual(['load_skill', 'read_skill_resource']);
  });

  it("role 'user' puts the project files in a user message ahead of the prompt", async () => {
    const { app } = repo();
    const model = createMockModel({ responses: [{ text: 'ok' }] });
    await runHeadless({ model, prompt: 'Go.', store: createInMemoryAgentRunStore(), projectDir: app, projectInstructions: { role: 'user' } });
    const messages = model.calls[0]!.messages;
    expect(messages.map((m) => m.role)).toEqual(['user', 'user']);
    expect(messages[0]!.content).toContain('App rule: use pnpm.');
    expect(messages[1]!.content).toBe('Go.');
  });

  it('an AGENTS.md linked outside the repository is not read and the report warns', async () => {
    const { app } = repo();
    const outside = realpathSync(mkdtempSync(join(tmpdir(), 'cairn-outside-')));
    writeFileSync(join(outside, 'npmrc'), '//registry.example/:_authToken=OUTSIDE-SECRET\n');
    symlinkSync(join(outside, 'npmrc'), join(app, 'AGENTS.md'));
    const model = createMockModel({ responses: [{ text: 'ok' }] });
    const report = await runHeadless({ model, prompt: 'Go.', store: createInMemoryAgentRunStore(), projectDir: app });
    expect(report.warnings).toEqual([expect.objectContaining({ code: 'instructions-outside-root' })]);
    expect(JSON.stringify(model.calls)).not.toContain('OUTSIDE-SECRET');
    expect(JSON.stringify(report)).not.toContain('OUTSIDE-SECRET');
  });

  it('a mistyped projectDir rejects with a TypeError and writes nothing', async () => {
    const { root } = repo();
    const store = createInMemoryAgentRunStore();
    const model = createMockModel({ responses: [{ text: 'ok' }] });
    await expect(runHeadless({ model, prompt: 'Go.', store, runId: 'r', projectDir: join(root, 'pakages', 'app') })).rejects.toThrow(TypeError);
    expect(await store.load('r')).toBeUndefined();
    expect(model.calls).toHaveLength(0);
  });

  it('a tool of yours cannot take a skill tool name: the leg rejects before anything is written', async () => {
    const { skills } = repo();
    const store = createInMemoryAgentRunStore();
    await expect(runHeadless({
      model: createMockModel({ responses: [{ text: 'ok' }] }),
      prompt: 'Go.', store, runId: 'r', skills,
      tools: { load_skill: { parameters: { type: 'object' }, execute: () => 'mine' } },
    })).rejects.toThrow(TypeError);
    expect(await store.load('r')).toBeUndefined();
  });

  it('skill tools read the skill and its files, refuse a path with .., and come back on resume; instructions load on the first leg only', async () => {
    const { root, app, skills } = repo();
    const store = createInMemoryAgentRunStore();
    const tools: AgentTools = { ship: { parameters: { type: 'object' }, needsApproval: true, execute: () => 'shipped' } };
    const turns: MockTurn[] = [
      { toolCalls: [{ toolName: 'load_skill', args: { id: 'release' } }] },
      { toolCalls: [{ toolName: 'read_skill_resource', args: { id: 'release', path: 'checklist.md' } }] },
      { toolCalls: [{ toolName: 'read_skill_resource', args: { id: 'release', path: '../../secret.txt' } }] },
      { toolCalls: [{ toolName: 'ship', args: {} }] },
      { text: 'Released.' },
    ];
    const first = await runHeadless({ model: byToolResults(turns), prompt: 'Release.', tools, store, runId: 'rel', projectDir: app, skills });
    expect(first.outcome).toBe('pending');
    const results = first.messages.filter((m) => m.role === 'tool');
    expect(results[0]).toMatchObject({ toolName: 'load_skill', content: expect.stringContaining('Tag, then publish.') });
    expect(results[1]).toMatchObject({ toolName: 'read_skill_resource', content: expect.stringContaining('2. tag') });
    expect(results[2]).toMatchObject({ toolName: 'read_skill_resource', isError: true });
    expect(JSON.stringify(first.messages)).not.toContain('TOP-SECRET-VALUE');

    // The files change between legs; the stored transcript keeps what the first leg loaded.
    writeFileSync(join(root, 'AGENTS.md'), 'Changed rule.\n');
    const model = byToolResults(turns);
    const approvalResponses = first.pending.flatMap((a) => (a.kind === 'approval' ? [{ approvalId: a.approvalId, token: a.token, approved: true }] : []));
    const done = await resumeHeadless({ model, tools, store, runId: 'rel', skills, approvalResponses });
    expect([done.outcome, done.output]).toEqual(['completed', 'Released.']);
    expect(JSON.stringify(model.calls)).not.toContain('Changed rule.');
    expect(JSON.stringify(model.calls)).toContain('Root rule: run the tests.');

    // Without the skills the tools differ: the binding refuses the resume.
    const other = await resumeHeadless({ model, tools, store, runId: 'rel' });
    expect(other.error?.code).toBe('binding_changed');
  });
});

describe('malformed headless options', () => {
  it('a skills value that is neither a path nor a source is a refusal (failed report), not a rejection', async () => {
    const store = createInMemoryAgentRunStore();
    const report = await runHeadless({
      model: createMockModel({ responses: [{ text: 'x' }] }), prompt: 'x', store, runId: 'r', skills: 42 as never,
    });
    expect(report).toMatchObject({ outcome: 'failed', error: { code: 'invalid_options' } });
    expect(await store.load('r')).toBeUndefined();
  });
});

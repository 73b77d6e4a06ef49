/**
 * V3 runs (checkpointVersion: 3): the compiled context rides on the save
 * before its call, joins the history after the call, is reused by a reopened
 * step, and is compiled for a final answer too; the working memory's tail and
 * tools; the refusals, each before anything is read or written.
 */
import { describe, expect, it } from 'vitest';
import {
  createInMemoryAgentRunStore, createInMemoryAgentRunStoreV3, reconcileAgentRun, resumeAgent, resumeStreamAgent, runAgent, streamAgent,
  type AgentRunStoreV3, type LanguageModel, type Message,
} from 'cairn/agent';
import { createContextCompiler, createRagContextSource, type ContextManifest } from 'cairn/context';
import { createRedisOpsStore } from 'cairn/ops/redis';
import { createMockModel } from 'cairn/testing';
import { toAgentStreamResponse } from 'cairn/ui';
import { countingStoreV3, textOf } from './run-helpers.js';

const clock = { now: () => 1_000 };
const docs = (counter?: { n: number }) => createRagContextSource({
  retrieve: async () => {
    if (counter) counter.n++;
    return [{ text: 'Deploys need a green CI run.', index: 0, score: 0.9 }, { text: 'Staging is eu-west.', index: 1, score: 0.5 }];
  },
});
const manifestOf = (m: unknown) => m as ContextManifest;

describe('a V3 run with a context and a working memory', () => {
  it('saves the package with the start, sends it, and puts the retrieval block in the history after the call', async () => {
    const runs = countingStoreV3();
    const model = createMockModel({ responses: [{ text: 'Run CI, then deploy.' }] });
    const stream = streamAgent({
      checkpointVersion: 3,
      session: { store: runs, runId: 'r1', scope: 'acme' },
      model,
      prompt: 'How do I deploy?',
      context: { sources: [docs()] },
      workingMemory: { create: { scope: 'acme', goal: 'Deploy billing.', now: 5 } },
      deps: { clock },
    });
    const v3Types: string[] = [];
    for await (const event of stream.eventsV3) v3Types.push(event.type);
    const plain: string[] = [];
    for await (const event of stream.events) plain.push(event.type);
    const result = await stream.result;
    expect(result.status).toBe('completed');
    expect(v3Types).toContain('context');
    expect(plain).not.toContain('context');
    expect(v3Types.filter((t) => t !== 'context')).toEqual(plain);

    const record = (await runs.load('r1'))!;
    expect(record.version).toBe(3);
    const step = record.context!.steps[0]!;
    expect(step).toMatchObject({ step: 0, phase: 'loop' });
    const manifest = manifestOf(step.manifest);
    expect(manifest.refresh).toBe('initial');
    expect(manifest.placement).toEqual({ retrieval: 'appended', workingMemory: 'tail', tailKept: false });
    // The package rode on the start's save: no save of its own.
    expect(runs.saves[0]).toMatchObject({ state: 'starting', blobs: [step.blob.digest] });
    expect((await runs.getBlob(step.blob.digest)).status).toBe('found');

    // The request: the history, the retrieval block, then the working memory as its last message.
    const sent = model.calls[0]!.messages.map(textOf);
    expect(sent[0]).toBe('How do I deploy?');
    expect(sent[1]).toMatch(/^<cairn_context pass="0" step="0">\n\[rag rag:0\] Deploys need a green CI run\./);
    expect(sent[2]).toBe('<cairn_working_memory>\nGoal: Deploy billing.\n</cairn_working_memory>');
    // The history keeps the retrieval block (before the answer), not the tail.
    expect(result.messages.map((m) => m.role)).toEqual(['user', 'user', 'assistant']);
    expect(textOf(result.messages[1]!)).toBe(sent[1]);
    expect(record.workingMemory).toMatchObject({ revision: 0, snapshot: { scope: 'acme', goal: 'Deploy billing.', createdAt: 5, notes: [] } });
  });

  it('is still an AgentStream: toAgentStreamResponse sends none of the compiled context', async () => {
    const stream = streamAgent({
      checkpointVersion: 3, session: { store: createInMemoryAgentRunStoreV3(), runId: 'wire', scope: 's' },
      model: createMockModel({ responses: [{ text: 'Run CI first.' }] }), prompt: 'How do I deploy?',
      context: { sources: [docs()] }, workingMemory: { create: { scope: 's', goal: 'Deploy billing.' } },
    });
    const body = await toAgentStreamResponse(stream, { runId: 'wire' }).text();
    expect(body).toContain('Run CI first.');
    for (const leak of ['cairn_context', 'Deploys need', 'cairn_working_memory', 'Deploy billing', 'manifest', 'sha256:']) expect(body).not.toContain(leak);
    const types: string[] = [];
    for await (const e of stream.eventsV3) types.push(e.type);
    expect(types).toContain('context');
  });

  it('costs no save more than a V3 run without a context', async () => {
    const tools = { echo: { parameters: { type: 'object' }, execute: () => 'ok' } };
    const script = () => createMockModel({ responses: [{ toolCalls: [{ toolName: 'echo', args: {} }] }, { text: 'done' }] });
    const plain = countingStoreV3();
    await runAgent({ checkpointVersion: 3, session: { store: plain, runId: 'p', scope: 's' }, model: script(), prompt: 'go', tools });
    const withContext = countingStoreV3();
    const result = await runAgent({
      checkpointVersion: 3, session: { store: withContext, runId: 'c', scope: 's' }, model: script(), prompt: 'go', tools,
      context: { sources: [docs()] },
    });
    expect(result.status).toBe('completed');
    expect(withContext.saves.map((s) => s.state)).toEqual(plain.saves.map((s) => s.state));
    // Two steps, two manifests; the second package is the same retrieval, already in the history: stored once.
    const record = (await withContext.load('c'))!;
    expect(record.context!.steps.map((s) => manifestOf(s.manifest).placement.retrieval)).toEqual(['appended', 'unchanged']);
    const blobs = withContext.saves.flatMap((s) => s.blobs);
    // Both steps sent the same package: one blob.
    expect(new Set(blobs).size).toBe(1);
    expect(result.messages.filter((m) => textOf(m).startsWith('<cairn_context')).length).toBe(1);
  });

  it('a call that fails over to another model is compiled for that model, and its package saved before the call', async () => {
    const runs = countingStoreV3();
    const primary = createMockModel({ modelId: 'primary', strict: false, responses: [{ error: { status: 503 } }] });
    const fallback = createMockModel({ modelId: 'fallback', responses: [{ text: 'Run CI first.' }] });
    const events: { step: number; model: string }[] = [];
    const stream = streamAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'fo', scope: 'acme' }, model: primary, fallbackModels: [fallback],
      prompt: 'How do I deploy?', maxRetries: 0, context: { sources: [docs()] }, deps: { clock, sleep: async () => undefined },
    });
    for await (const event of stream.eventsV3) if (event.type === 'context') events.push({ step: event.step, model: event.manifest.model.modelId });
    const result = await stream.result;
    expect(result.status).toBe('completed');
    expect(fallback.calls).toHaveLength(1);
    expect(textOf(fallback.calls[0]!.messages[1]!)).toMatch(/^<cairn_context pass="\d+" step="0">/);
    const record = (await runs.load('fo'))!;
    expect(record.context!.steps.map((s) => [s.step, manifestOf(s.manifest).model.modelId])).toEqual([[0, 'fallback']]);
    expect(events).toEqual([{ step: 0, model: 'primary' }, { step: 0, model: 'fallback' }]);
    // The fallback's package was saved before its call: the save in callingModel, after the primary's failure (the same blocks: no new blob).
    expect(runs.saves.map((s) => s.state)).toEqual(['starting', { loop: 'callingModel' }, 'completed']);
  });

  it('compiles a final answer call the same way', async () => {
    const runs = countingStoreV3();
    const result = await runAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'f', scope: 's' },
      model: createMockModel({ responses: [{ text: '{"ok":true}' }] }),
      prompt: 'answer', output: { schema: { type: 'object' }, validate: (v) => v as { ok: boolean } },
      context: { sources: [docs()] },
    });
    expect(result.status).toBe('completed');
    const steps = (await runs.load('f'))!.context!.steps;
    expect(steps.map((s) => s.phase)).toEqual(['finalize']);
  });

  it('compiles a call no save precedes (a repair turn) at the call, and saves it once before the call', async () => {
    const script = () => createMockModel({ responses: [{ text: 'not json' }, { text: '{"ok":true}' }] });
    const output = { schema: { type: 'object' }, validate: (v: unknown) => v as { ok: boolean } };
    const plain = countingStoreV3();
    await runAgent({ checkpointVersion: 3, session: { store: plain, runId: 'r', scope: 's' }, model: script(), prompt: 'answer', output });
    const runs = countingStoreV3();
    const model = script();
    const result = await runAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'r', scope: 's' }, model, prompt: 'answer', output, context: { sources: [docs()] },
    });
    expect(result.status).toBe('completed');
    const steps = (await runs.load('r'))!.context!.steps;
    expect(steps.map((s) => [s.step, s.phase])).toEqual([[0, 'finalize'], [1, 'finalize']]);
    // The repair's package was saved by one save of its own, before its call.
    expect(runs.saves.length).toBe(plain.saves.length + 1);
    // Its package is the first step's (the same retrieval): the save carries the manifest, and no blob again.
    const repairSave = runs.saves.find((s) => JSON.stringify(s.state) === '{"finalizing":"callingModel"}');
    expect(repairSave?.blobs).toEqual([]);
    expect(runs.saves[0]!.blobs).toHaveLength(1);
    expect(model.calls[1]!.messages.some((m) => textOf(m).startsWith('<cairn_context'))).toBe(true);
  });

  it('reuses the stored package of a step reopened after a crash, without asking the sources', async () => {
    const runs = countingStoreV3();
    const asked = { n: 0 };
    const session = { store: runs, runId: 'crash', scope: 's' };
    const options = { checkpointVersion: 3 as const, session, prompt: 'How?', context: { sources: [docs(asked)] } };
    runs.failSave(2); // the turn's save, after the model answered: the answer is lost
    const first = createMockModel({ responses: [{ text: 'lost' }] });
    expect((await runAgent({ ...options, model: first })).status).toBe('failed');
    expect(asked.n).toBe(1);
    const second = createMockModel({ responses: [{ text: 'kept' }] });
    const result = await resumeAgent({ ...options, model: second });
    expect(result.status).toBe('completed');
    expect(asked.n).toBe(1);
    expect(second.calls[0]!.messages).toEqual(first.calls[0]!.messages);
    expect((await runs.load('crash'))!.context!.steps).toHaveLength(1);
  });

  it('goes on with a warning when a source throws or answers something that is not text', async () => {
    const stream = streamAgent({
      checkpointVersion: 3,
      session: { store: createInMemoryAgentRunStoreV3(), runId: 'w', scope: 's' },
      model: createMockModel({ responses: [{ text: 'fine' }] }),
      prompt: 'hi',
      context: {
        sources: [
          createRagContextSource({ name: 'broken', retrieve: async () => { throw new Error('index offline'); } }),
          createRagContextSource({ name: 'odd', retrieve: async () => [{ text: 42, index: 0 }] as never }),
        ],
      },
    });
    const result = await stream.result;
    expect(result.status).toBe('completed');
    const warnings = result.warnings.filter((w) => w.setting === 'context').map((w) => w.message);
    expect(warnings).toEqual([
      'context source broken: retrieve() threw: index offline; the step goes on without this source.',
      'context source odd: Record 0 of retrieve() has no text; it was left out.',
    ]);
  });

  it('calibrates a host estimator with each call\'s input, cache-read and cache-write tokens', async () => {
    const samples: unknown[] = [];
    const usage = { inputTokens: 120, outputTokens: 3, totalTokens: 123, cacheReadTokens: 100, cacheWriteTokens: 7 };
    const model: LanguageModel = {
      specificationVersion: 'cairn-model-1', provider: 'test', modelId: 'cached',
      doGenerate: async () => ({ text: 'ok', toolCalls: [], finishReason: 'stop', usage }),
    };
    await runAgent({
      checkpointVersion: 3, session: { store: createInMemoryAgentRunStoreV3(), runId: 'e', scope: 's' },
      model,
      prompt: 'hi',
      context: { sources: [docs()], estimator: { estimate: (t) => t.length, calibrate: (s) => samples.push(s) } },
    });
    expect(samples).toEqual([{ estimatedTokens: expect.any(Number), inputTokens: 120, cacheReadTokens: 100, cacheWriteTokens: 7 }]);
  });

  it('drops the lowest-scored records to fit the window, and refuses a history that does not fit', async () => {
    const runs = countingStoreV3();
    const fits = await runAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'o1', scope: 's' },
      model: createMockModel({ responses: [{ text: 'ok' }] }), prompt: 'hi',
      context: { sources: [docs()], window: 50, estimator: { estimate: (t) => Math.ceil(t.length / 2) } },
    });
    expect(fits.status).toBe('completed');
    const manifest = manifestOf((await runs.load('o1'))!.context!.steps[0]!.manifest);
    expect(manifest.overflow).toEqual({ dropped: 1, droppedIds: ['rag:1'] });
    const model = createMockModel({ responses: [{ text: 'never' }] });
    const tooBig = await runAgent({
      checkpointVersion: 3, session: { store: createInMemoryAgentRunStoreV3(), runId: 'o2', scope: 's' },
      model, prompt: 'x'.repeat(400), context: { sources: [docs()], window: 50 },
    });
    expect(tooBig.status).toBe('failed');
    expect(tooBig.status === 'failed' && tooBig.error.code).toBe('context_overflow');
    expect(model.calls).toHaveLength(0);
  });

  it('keeps the tail in the history for a model that binds preserved thinking to the prefix', async () => {
    const mock = createMockModel({ responses: [{ text: 'a' }] });
    const claude = { ...mock, provider: 'anthropic', modelId: 'claude-sonnet-5', doGenerate: mock.doGenerate.bind(mock), doStream: mock.doStream.bind(mock) };
    const runs = countingStoreV3();
    const result = await runAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'k', scope: 's' }, model: claude as never, prompt: 'hi',
      context: { sources: [docs()] }, workingMemory: { create: { scope: 's', goal: 'G' } },
    });
    expect(result.status).toBe('completed');
    expect(manifestOf((await runs.load('k'))!.context!.steps[0]!.manifest).placement.tailKept).toBe(true);
    expect(result.messages.map((m) => textOf(m).slice(0, 22))).toEqual(['hi', '<cairn_context pass="0', '<cairn_working_memory>', 'a']);
  });
});

describe('working memory', () => {
  // Asks to add the note until it sees the tool's answer: a replayed step asks again, as a model would.
  const addingModel = () => createMockModel({
    strict: false,
    responses: [(request) => (request.messages.some((m) => m.role === 'tool')
      ? { text: 'noted' }
      : { toolCalls: [{ toolName: 'working_memory_add', args: { text: 'CI is green.' }, toolCallId: 'c1' }] })],
  });

  it('gives the model its tools; a patch is saved with the call, and the next request carries it', async () => {
    const runs = countingStoreV3();
    const model = addingModel();
    const stream = streamAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'wm', scope: 's' }, model, prompt: 'remember',
      workingMemory: { create: { scope: 's', goal: 'G', now: 1 }, tools: true },
    });
    const revisions: number[] = [];
    for await (const e of stream.eventsV3) if (e.type === 'working-memory') revisions.push(e.revision);
    expect((await stream.result).status).toBe('completed');
    expect(revisions).toEqual([1]);
    expect(model.calls[0]!.tools!.map((t) => t.name)).toEqual(['working_memory_read', 'working_memory_add', 'working_memory_update']);
    expect(textOf(model.calls[1]!.messages.at(-1)!)).toBe('<cairn_working_memory>\nGoal: G\nNotes:\n- [n1] CI is green.\n</cairn_working_memory>');
    const record = (await runs.load('wm'))!;
    expect(record.workingMemory).toMatchObject({ revision: 1, snapshot: { notes: [{ id: 'n1', text: 'CI is green.' }] } });
  });

  it('applies a patch once whatever save a crash hits, and a resume keeps the stored memory', async () => {
    const probe = countingStoreV3();
    await runAgent({
      checkpointVersion: 3, session: { store: probe, runId: 'x', scope: 's' }, model: addingModel(), prompt: 'remember',
      workingMemory: { create: { scope: 's', now: 1 }, tools: true },
    });
    const total = probe.saves.length;
    for (let n = 1; n <= total; n++) {
      const runs = countingStoreV3();
      runs.failSave(n);
      const base = {
        checkpointVersion: 3 as const, session: { store: runs, runId: `x${n}`, scope: 's' }, prompt: 'remember',
        workingMemory: { create: { scope: 's', goal: 'ignored on resume', now: 2 }, tools: true },
      };
      const first = await runAgent({ ...base, model: addingModel(), workingMemory: { create: { scope: 's', now: 1 }, tools: true } });
      let result = first;
      if (first.status !== 'completed') result = await resumeAgent({ ...base, model: addingModel() });
      const record = (await runs.load(`x${n}`))!;
      if (result.status !== 'completed') {
        // A crash before the first save: nothing was stored, the run starts again.
        expect(record).toBeUndefined();
        continue;
      }
      expect(record.workingMemory, `crash at save ${n}`).toMatchObject({ revision: 1, snapshot: { goal: null, notes: [{ id: 'n1', text: 'CI is green.' }] } });
    }
  });
});

describe('what a V3 run refuses, before anything is read or written', () => {
  const model = () => createMockModel({ responses: [{ text: 'never' }] });

  it('a V3 option without checkpointVersion 3', async () => {
    const store = createInMemoryAgentRunStore();
    for (const extra of [{ context: { sources: [] } }, { workingMemory: {} }, { versionedMemory: {} as never }]) {
      const m = model();
      const result = await runAgent({ model: m, prompt: 'hi', session: { store, runId: 'a', scope: 's' }, ...extra });
      expect(result.status === 'failed' && result.error.code).toBe('invalid_options');
      expect(m.calls).toHaveLength(0);
    }
    expect(await store.load('a')).toBeUndefined();
  });

  it('a store that is not an AgentRunStoreV3, a Redis store, and a V3 store without checkpointVersion 3', async () => {
    const plain = await runAgent({
      checkpointVersion: 3, model: model(), prompt: 'hi', session: { store: createInMemoryAgentRunStore() as never, runId: 'b', scope: 's' },
    });
    expect(plain.status === 'failed' && plain.error).toMatchObject({ name: 'UnsupportedStoreError', code: 'unsupported_store' });
    const ops = createRedisOpsStore({ url: 'redis://127.0.0.1:1' });
    const redis = await runAgent({ checkpointVersion: 3, model: model(), prompt: 'hi', session: { store: ops.agentRuns as never, runId: 'b', scope: 's' } });
    expect(redis.status === 'failed' && redis.error.message).toMatch(/Redis/);
    await ops.close();
    const v3 = countingStoreV3();
    const unmarked = await runAgent({ model: model(), prompt: 'hi', session: { store: v3 as never, runId: 'b', scope: 's' } });
    expect(unmarked.status === 'failed' && unmarked.error.message).toMatch(/checkpointVersion: 3/);
    expect(v3.saves.length + v3.loads).toBe(0);
  });

  it('versionedMemory without a memory session, a checkpointVersion it does not know, a V3 run without a session', async () => {
    const runs = countingStoreV3();
    const session = { store: runs, runId: 'c', scope: 's' };
    const a = await runAgent({ checkpointVersion: 3, session, model: model(), prompt: 'hi', versionedMemory: {} as never });
    const b = await runAgent({ checkpointVersion: 4 as never, session, model: model(), prompt: 'hi' });
    const c = await runAgent({ checkpointVersion: 3, model: model(), prompt: 'hi' } as never);
    const d = await runAgent({ checkpointVersion: 3, session, model: model(), prompt: 'hi', workingMemory: { tools: true }, tools: { working_memory_read: { parameters: { type: 'object' } } } });
    for (const r of [a, b, c, d]) expect(r.status === 'failed' && r.error.code).toBe('invalid_options');
    expect(runs.saves.length + runs.loads).toBe(0);
  });

  it('reconcileAgentRun rejects the same configurations', async () => {
    await expect(reconcileAgentRun({ checkpointVersion: 3, session: { store: createInMemoryAgentRunStore() as never, runId: 'r', scope: 's' } }))
      .rejects.toMatchObject({ code: 'unsupported_store' });
    const runs = countingStoreV3();
    await expect(reconcileAgentRun({ session: { store: runs as never, runId: 'r', scope: 's' } })).rejects.toMatchObject({ code: 'invalid_options' });
    expect(runs.loads).toBe(0);
  });

  it('reconciles a V3 run on its V3 store', async () => {
    const runs = countingStoreV3();
    const session = { store: runs, runId: 'rv', scope: 's' };
    await runAgent({ checkpointVersion: 3, session, model: createMockModel({ responses: [{ text: 'ok' }] }), prompt: 'hi' });
    const answer = await reconcileAgentRun({ checkpointVersion: 3, session });
    expect(answer).toEqual({ runId: 'rv' });
    expect(answer.status).toBe('completed');
  });
});

describe('resuming a V3 run', () => {
  const approve = { send: { parameters: { type: 'object' }, needsApproval: true, execute: () => 'sent' } };
  async function suspended(runs: AgentRunStoreV3, runId: string) {
    const result = await runAgent({
      checkpointVersion: 3, session: { store: runs, runId, scope: 's' }, prompt: 'send it', tools: approve,
      model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'send', args: {} }] }] }),
      context: { sources: [docs()] },
    });
    expect(result.status).toBe('suspended');
    return result.status === 'suspended' ? result.pendingApprovals[0]! : null!;
  }

  it('restores the compiler state from the record; a compiler built here resumes only with the same state', async () => {
    const runs = countingStoreV3();
    const pending = await suspended(runs, 'res');
    const answer = { approvalId: pending.approvalId, token: pending.token, approved: true };
    const base = { checkpointVersion: 3 as const, session: { store: runs, runId: 'res', scope: 's' }, tools: approve, approvalResponses: [answer] };
    const saves = runs.saves.length;
    const refused = await resumeAgent({ ...base, model: createMockModel({ responses: [{ text: 'x' }] }), context: createContextCompiler({ sources: [docs()] }) });
    expect(refused.status === 'failed' && refused.error.code).toBe('context_state_mismatch');
    expect(runs.saves.length).toBe(saves);
    const model = createMockModel({ responses: [{ text: 'sent.' }] });
    const result = await resumeAgent({ ...base, model, context: { sources: [docs()] } });
    expect(result.status).toBe('completed');
    const steps = (await runs.load('res'))!.context!.steps;
    expect(steps.map((s) => [s.step, manifestOf(s.manifest).pass, manifestOf(s.manifest).placement.retrieval])).toEqual([[0, 0, 'appended'], [1, 1, 'unchanged']]);
    expect(model.calls[0]!.messages.filter((m: Message) => textOf(m).startsWith('<cairn_context'))).toHaveLength(1);
  });

  it('resumeStreamAgent returns an AgentStreamV3 whose eventsV3 carry the resumed step\'s context', async () => {
    const runs = countingStoreV3();
    const pending = await suspended(runs, 'rs');
    const stream = resumeStreamAgent({
      checkpointVersion: 3, session: { store: runs, runId: 'rs', scope: 's' }, tools: approve,
      approvalResponses: [{ approvalId: pending.approvalId, token: pending.token, approved: true }],
      model: createMockModel({ responses: [{ text: 'sent.' }] }), context: { sources: [docs()] },
    });
    const contexts: Array<[number, string]> = [];
    for await (const e of stream.eventsV3) if (e.type === 'context') contexts.push([e.step, e.manifest.refresh]);
    expect((await stream.result).status).toBe('completed');
    expect(contexts).toEqual([[1, 'step']]);
  });

  it('refuses a record whose package blob is missing, one of a future version, and one of another scope', async () => {
    const inner = createInMemoryAgentRunStoreV3();
    const runs = countingStoreV3(inner);
    const pending = await suspended(runs, 'bad');
    const answer = { approvalId: pending.approvalId, token: pending.token, approved: true };
    const saves = runs.saves.length;
    const gone: AgentRunStoreV3 = { ...runs, checkpointVersion: 3, getBlob: async () => ({ status: 'missing' }) };
    const base = { checkpointVersion: 3 as const, tools: approve, approvalResponses: [answer], context: { sources: [docs()] } };
    const m = createMockModel({ responses: [{ text: 'never' }] });
    const missing = await resumeAgent({ ...base, session: { store: gone, runId: 'bad', scope: 's' }, model: m });
    expect(missing.status === 'failed' && missing.error.code).toBe('context_blob_missing');
    const future: AgentRunStoreV3 = { ...runs, checkpointVersion: 3, load: async (id, o) => ({ ...(await inner.load(id, o))!, version: 4 as 3 }) };
    const newer = await resumeAgent({ ...base, session: { store: future, runId: 'bad', scope: 's' }, model: m });
    expect(newer.status === 'failed' && newer.error.code).toBe('checkpoint_version_unsupported');
    const other = await resumeAgent({ ...base, session: { store: runs, runId: 'bad', scope: 'elsewhere' }, model: m });
    expect(other.status === 'failed' && other.error.code).toBe('scope_mismatch');
    expect(m.calls).toHaveLength(0);
    expect(runs.saves.length).toBe(saves);
  });
});

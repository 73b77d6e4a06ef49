/**
 * OpenTelemetry spans of a run, read with the SDK's in-memory exporter: the
 * run, its steps, each model call (GenAI attributes), each tool call (stage,
 * outcome, receipt) and each save; a resume's run span linked to the leg
 * before it, in this process and in another one; no prompt, argument or
 * result on a span unless asked for; nothing at all with `tracing: false`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentRunStore } from '../../src/agent/index.js';
import { createSqliteOpsStore } from '../../src/ops/sqlite/index.js';
import { createMockModel } from '../../src/testing/index.js';
import { otelApi } from '../../src/tracing/otel.js';
import { ARG_CANARY, PROMPT_CANARY, RESULT_CANARY, tracedOptions } from './scenario.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
beforeAll(() => { trace.setGlobalTracerProvider(provider); });
afterAll(async () => {
  trace.disable();
  await provider.shutdown();
});
beforeEach(() => exporter.reset());

const spans = () => exporter.getFinishedSpans();
const named = (name: string) => spans().filter((s) => s.name === name);
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

async function suspendThenResume(store: AgentRunStore) {
  const first = await runAgent(tracedOptions(store));
  if (first.status !== 'suspended') throw new Error(`expected a suspension, got ${first.status}`);
  const firstSpans = spans();
  exporter.reset();
  const approval = first.pendingApprovals[0]!;
  const second = await resumeAgent({ ...tracedOptions(store), approvalResponses: [{ approvalId: approval.approvalId, token: approval.token, approved: true }] });
  return { first, second, firstSpans, secondSpans: spans() };
}

describe('the spans of a run', () => {
  it('a run span holding its steps, each step its model call and its tool calls, and a span per save', async () => {
    const store = createInMemoryAgentRunStore();
    const result = await runAgent(tracedOptions(store));
    expect(result.status).toBe('suspended');
    const [run, ...others] = named('cairn.run');
    expect(others).toEqual([]);
    expect(run!.attributes).toMatchObject({ 'cairn.run.id': 'traced-1', 'cairn.run.resumed': false, 'cairn.run.status': 'suspended', 'cairn.run.steps': 2 });
    expect(run!.links).toEqual([]);

    const steps = named('cairn.step');
    expect(steps.map((s) => s.attributes['cairn.step'])).toEqual([0, 1]);
    for (const step of steps) expect(parentOf(step)).toBe(run!.spanContext().spanId);

    const chats = named('chat scripted-1');
    expect(chats).toHaveLength(2);
    expect(chats[0]!.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat', 'gen_ai.system': 'mock', 'gen_ai.request.model': 'scripted-1',
      'gen_ai.usage.input_tokens': 11, 'gen_ai.usage.output_tokens': 5, 'gen_ai.response.finish_reasons': ['tool-calls'],
    });
    expect(chats.map(parentOf)).toEqual(steps.map((s) => s.spanContext().spanId));

    const lookup = named('execute_tool lookup')[0]!;
    expect(lookup.attributes).toMatchObject({
      'gen_ai.tool.name': 'lookup', 'gen_ai.tool.call.id': 'c-lookup', 'cairn.tool.outcome': 'completed', 'cairn.tool.stage': 'completed',
    });
    expect(parentOf(lookup)).toBe(steps[0]!.spanContext().spanId);
    // The call waiting for a human ends its span with the leg, where it stands.
    const deploy = named('execute_tool deploy')[0]!;
    expect(deploy.attributes).toMatchObject({ 'cairn.tool.outcome': 'open', 'cairn.tool.stage': 'approval.awaitingApproval', 'cairn.tool.receipt': 'none' });

    const saves = named('cairn.save');
    expect(saves.length).toBeGreaterThan(1);
    expect(saves.map((s) => s.attributes['cairn.save.revision'])).toEqual(saves.map((_, i) => i + 1));
    expect(saves.at(-1)!.attributes['cairn.run.status']).toBe('suspended');
    // The record keeps the run span's context for the next leg.
    expect((await store.load('traced-1', { scope: 'tenant-t' }))!.trace).toEqual({ traceId: run!.spanContext().traceId, spanId: run!.spanContext().spanId });
  });

  it('a resume links its run span to the leg before it, and the deploy span says its receipt', async () => {
    const { second, firstSpans, secondSpans } = await suspendThenResume(createInMemoryAgentRunStore());
    expect(second.status).toBe('completed');
    const before = firstSpans.find((s) => s.name === 'cairn.run')!;
    const after = secondSpans.find((s) => s.name === 'cairn.run')!;
    expect(after.attributes).toMatchObject({ 'cairn.run.resumed': true, 'cairn.run.status': 'completed', 'cairn.run.steps': 3 });
    expect(after.links.map((l) => l.context)).toEqual([expect.objectContaining({ traceId: before.spanContext().traceId, spanId: before.spanContext().spanId })]);
    const deploy = secondSpans.find((s) => s.name === 'execute_tool deploy')!;
    expect(deploy.attributes).toMatchObject({ 'cairn.tool.outcome': 'completed', 'cairn.tool.stage': 'completed' });
    expect(deploy.attributes['cairn.tool.receipt']).toBe('completed');
  });

  it('never puts the prompt, the arguments or the results on a span unless recordContent says so', async () => {
    await suspendThenResume(createInMemoryAgentRunStore());
    const text = JSON.stringify(spans().map((s) => [s.name, s.attributes, s.events]));
    for (const canary of [PROMPT_CANARY, ARG_CANARY, RESULT_CANARY]) expect(text).not.toContain(canary);

    exporter.reset();
    await runAgent(tracedOptions(createInMemoryAgentRunStore(), { tracing: { recordContent: true } }));
    const lookup = named('execute_tool lookup')[0]!;
    expect(lookup.attributes['cairn.tool.arguments']).toContain(ARG_CANARY);
    expect(lookup.attributes['cairn.tool.output']).toContain(RESULT_CANARY);
  });

  it('a model call that fails ends its span with an error status, and the run span with the failure', async () => {
    const model = createMockModel({ modelId: 'scripted-1', responses: [{ error: { status: 400, message: 'bad request' } }] });
    const result = await runAgent({ model, prompt: 'hi', maxRetries: 0 });
    expect(result.status).toBe('failed');
    const chat = named('chat')[0]!;
    expect(chat.status.code).toBe(2);
    const run = named('cairn.run')[0]!;
    expect(run.status.code).toBe(2);
    expect(run.attributes['cairn.run.error_code']).toBe(result.status === 'failed' ? result.error.code : '');
  });

  it('uses the tracer it is given, and none with tracing: false', async () => {
    const own = new InMemorySpanExporter();
    const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(own)] }).getTracer('mine');
    await runAgent({ model: createMockModel({ responses: [{ text: 'Hi' }] }), prompt: 'hi', tracing: { tracer } });
    expect(own.getFinishedSpans().map((s) => s.name)).toContain('cairn.run');
    expect(spans()).toEqual([]);

    const store = createInMemoryAgentRunStore();
    const result = await runAgent(tracedOptions(store, { tracing: false }));
    expect(result.status).toBe('suspended');
    expect(spans()).toEqual([]);
    expect((await store.load('traced-1', { scope: 'tenant-t' }))!.trace).toBeUndefined();
  });

  it('refuses a tracing option of the wrong shape before anything is written', async () => {
    for (const tracing of [null, 'yes', { tracer: {} }, { recordContent: 'no' }]) {
      const store = createInMemoryAgentRunStore();
      const result = await runAgent(tracedOptions(store, { tracing: tracing as never }));
      expect(result.status).toBe('failed');
      if (result.status === 'failed') expect(result.error.code).toBe('invalid_options');
      expect(await store.load('traced-1', { scope: 'tenant-t' })).toBeUndefined();
    }
    expect(spans()).toEqual([]);
  });

  it('is a no-op without the API package', () => {
    expect(otelApi(() => { throw new Error("Cannot find module '@opentelemetry/api'"); })).toBeNull();
    expect(otelApi(() => ({}))).toBeNull();
    expect(otelApi()).not.toBeNull();
  });

  it('ignores a stored trace that is not a span context', async () => {
    const store = createInMemoryAgentRunStore();
    const first = await runAgent(tracedOptions(store));
    if (first.status !== 'suspended') throw new Error(first.status);
    const stored = (await store.load('traced-1', { scope: 'tenant-t' }))!;
    await store.save({ ...stored, revision: stored.revision + 1, trace: { traceId: 'not-hex', spanId: '0000000000000000' } });
    exporter.reset();
    const approval = first.pendingApprovals[0]!;
    const second = await resumeAgent({ ...tracedOptions(store), approvalResponses: [{ approvalId: approval.approvalId, token: approval.token, approved: true }] });
    expect(second.status).toBe('completed');
    expect(named('cairn.run')[0]!.links).toEqual([]);
  });
});

describe('across processes', () => {
  const dirs: string[] = [];
  afterAll(() => { for (const dir of dirs) rmSync(dir, { recursive: true, force: true }); });

  function leg(path: string, mode: 'start' | 'resume'): Promise<{ status: string; spans: { name: string; spanId: string; traceId: string; attributes: Record<string, unknown>; links: { traceId: string; spanId: string }[] }[] }> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', 'test/tracing/leg-process.ts', path, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
      child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`leg ${mode} exited ${code}: ${err}`))));
    });
  }

  it('a resume in another process links to the suspended leg through the SQLite record', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-trace-'));
    dirs.push(dir);
    const path = join(dir, 'runs.sqlite');
    const first = await leg(path, 'start');
    expect(first.status).toBe('suspended');
    const second = await leg(path, 'resume');
    expect(second.status).toBe('completed');
    const before = first.spans.find((s) => s.name === 'cairn.run')!;
    const after = second.spans.find((s) => s.name === 'cairn.run')!;
    expect(after.links).toEqual([{ traceId: before.traceId, spanId: before.spanId }]);
    const ops = createSqliteOpsStore({ path });
    try {
      expect((await ops.agentRuns.load('traced-1', { scope: 'tenant-t' }))!.trace).toEqual({ traceId: after.traceId, spanId: after.spanId });
    } finally {
      ops.close();
    }
  }, 60_000);
});

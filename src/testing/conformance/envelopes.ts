/**
 * Envelopes for the store suite: hand-built ones shaped like the engine's
 * (a transcript in the snapshot, receipts per model step, a result once the
 * run ended), and the real ones a scripted run writes, save by save.
 */
import { resumeAgent, runAgent } from '../../agent/run-agent.js';
import type {
  AgentRunEnvelope, AgentRunStatus, AgentRunStore, AgentToolReceipt, JsonValue, Message, PendingApproval,
  PendingClientCall,
} from '../../agent/types.js';
import { CairnError, type SerializedError } from '../../errors/index.js';
import { createMockModel } from '../mock-model.js';

export interface EnvelopeSpec {
  runId: string;
  /** @default 'tenant-a' */
  scope?: string;
  /** @default 1 */
  revision?: number;
  /** @default 'running' */
  status?: AgentRunStatus;
  /** @default 1000 */
  createdAt?: number;
  /** @default createdAt */
  updatedAt?: number;
  /** Model turns taken so far, each with two tool calls. @default 1 */
  steps?: number;
  /** The last turn's calls have `executing` receipts and no answers yet. @default false */
  openCalls?: boolean;
  /** Text written into the transcript, the arguments and the results, to look for where it leaks. @default 'plain' */
  marker?: string;
  /** @default 0 */
  pendingApprovals?: number;
  /** @default 0 */
  pendingClientCalls?: number;
  /** @default 'conformance-v1' */
  bindingId?: string | null;
}

const TERMINAL: ReadonlySet<AgentRunStatus> = new Set(['completed', 'stopped', 'failed']);

/** Tool arguments as a model sends them: nested, with nulls and unicode. */
function argsFor(step: number, marker: string): JsonValue {
  return {
    query: `${marker} step ${step}: Zürich → 東京 🚆`,
    page: step,
    ratio: step + 0.25,
    big: Number.MAX_SAFE_INTEGER - step,
    negative: -step - 1,
    filters: { tags: ['a', 'b', ''], exact: true, limit: null, nested: [[1, [2, [3]]], {}] },
  };
}

/**
 * JSON a model may send that is easy to lose on the way through a codec: keys
 * named `__proto__` (an own key, as JSON.parse makes it), `constructor` and
 * `''`, control and line-separator characters, extreme numbers, deep nesting.
 */
export function awkwardJson(): JsonValue {
  return JSON.parse(String.raw`{
    "__proto__": { "polluted": true },
    "constructor": { "prototype": 1 },
    "": "empty key",
    "toString": "x",
    "text": "nul\u0000 tab\t newline\n quote\" backslash\\ é 🙂 \u2028",
    "numbers": [0, -1, 1.5, -2.75, 9007199254740991, -9007199254740991, 1e300, 5e-324, 4294967296],
    "deep": [[[[[[{ "a": [null, true, false, "", {}] }]]]]]],
    "empty": {},
    "list": []
  }`) as JsonValue;
}

/** The transcript of a run that took `steps` turns; the last turn's calls are unanswered with `openCalls`. */
export function transcriptOf(steps: number, marker: string, openCalls = false): Message[] {
  const messages: Message[] = [
    { role: 'system', content: 'You plan trips.' },
    { role: 'user', content: `Plan the trip (${marker}).` },
  ];
  for (let s = 0; s < steps; s++) {
    messages.push({
      role: 'assistant',
      content: s % 2 === 0 ? '' : `Checking step ${s}, ${marker}.`,
      toolCalls: [
        { toolCallId: `call_${s}_0`, toolName: 'search', args: argsFor(s, marker) },
        { toolCallId: `call_${s}_1`, toolName: 'fetch_page', args: { url: `https://example.com/${marker}/${s}` } },
      ],
    });
    if (openCalls && s === steps - 1) break;
    messages.push(
      { role: 'tool', toolCallId: `call_${s}_0`, toolName: 'search', content: { hits: [`${marker}-${s}-a`, `${marker}-${s}-b`], total: 2 } },
      { role: 'tool', toolCallId: `call_${s}_1`, toolName: 'fetch_page', content: `Page ${s} of ${marker}: line one\nline two\ttabbed`, isError: s % 3 === 2 },
    );
  }
  return messages;
}

function receiptsOf(steps: number, marker: string, openCalls: boolean): Record<string, AgentToolReceipt> {
  const receipts: Record<string, AgentToolReceipt> = {};
  for (let s = 0; s < steps; s++) {
    const open = openCalls && s === steps - 1;
    for (const [i, toolName] of ['search', 'fetch_page'].entries()) {
      const toolCallId = `call_${s}_${i}`;
      const key = `${s}:${toolCallId}`;
      receipts[key] = open
        ? { key, toolCallId, toolName, modelStep: s, status: 'executing', idempotent: i === 0 }
        : {
          key, toolCallId, toolName, modelStep: s, status: 'completed', idempotent: i === 0,
          rawResult: { marker, step: s, call: i, rows: [{ id: s, ok: true }] },
          modelOutput: i === 0 ? { hits: [`${marker}-${s}-a`, `${marker}-${s}-b`], total: 2 } : `Page ${s} of ${marker}`,
          ...(s % 3 === 2 && i === 1 ? { isError: true } : {}),
        };
    }
  }
  return receipts;
}

/**
 * An envelope shaped like the engine's. Two specs with the same runId and
 * growing `steps` are successive saves of one run: the transcript only grows,
 * earlier steps' receipts never change.
 */
export function buildEnvelope(spec: EnvelopeSpec): AgentRunEnvelope {
  const scope = spec.scope ?? 'tenant-a';
  const status = spec.status ?? 'running';
  const steps = spec.steps ?? 1;
  const marker = spec.marker ?? 'plain';
  const openCalls = spec.openCalls ?? false;
  const createdAt = spec.createdAt ?? 1000;
  const messages = transcriptOf(steps, marker, openCalls);
  const pendingApprovals: PendingApproval[] = Array.from({ length: spec.pendingApprovals ?? 0 }, (_, i) => ({
    approvalId: `approve_${i}@abc${i}`, token: `token-${marker}-${i}`, toolCallId: `approve_${i}`, toolName: 'publish',
    args: { slug: `${marker}-${i}` }, modelStep: steps,
  }));
  const pendingClientCalls: PendingClientCall[] = Array.from({ length: spec.pendingClientCalls ?? 0 }, (_, i) => ({
    toolCallId: `client_${i}`, toolName: 'pick_color', args: { palette: marker }, modelStep: steps,
  }));
  const usage = { inputTokens: 100 * steps, outputTokens: 10 * steps, totalTokens: 110 * steps };
  const base = {
    runId: spec.runId, messages, usage, steps,
    accounting: { spent: { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, usd: null }, reserved: { usd: 0, tokens: 0 }, committed: { usd: 0, tokens: 0 }, unknown: { usd: 0, tokens: 0 } },
    text: `Done: ${marker}.`, warnings: [],
  };
  const envelope: AgentRunEnvelope = {
    kind: 'cairn-agent-run',
    version: pendingApprovals.length > 0 ? 2 : 1,
    runId: spec.runId,
    scope,
    revision: spec.revision ?? 1,
    bindingId: spec.bindingId === undefined ? 'conformance-v1' : spec.bindingId,
    binding: {
      bindingId: spec.bindingId === undefined ? 'conformance-v1' : spec.bindingId,
      model: 'mock:mock-model', tools: 'sha256:tools', output: null, limits: 'sha256:limits',
    },
    machine: { id: 'run', version: 1 },
    snapshot: {
      status: TERMINAL.has(status) ? 'done' : 'active',
      value: status === 'running' ? 'loop' : status,
      historyValue: {},
      context: {
        runId: spec.runId,
        messages: messages as unknown as JsonValue,
        maxSteps: 20,
        step: steps,
        lastTurn: steps > 0 ? { step: steps - 1, phase: 'loop', text: '', finishReason: 'tool-calls' } : null,
        usage,
        error: null,
      },
      children: {},
    },
    receipts: receiptsOf(steps, marker, openCalls),
    approvalRequestCounts: Object.fromEntries(pendingApprovals.map((a) => [a.toolCallId, 1])),
    approvals: Object.fromEntries(pendingApprovals.map((a) => [a.approvalId, { toolCallId: a.toolCallId, modelStep: a.modelStep, token: a.token }])),
    status,
    pendingApprovals,
    pendingClientCalls,
    createdAt,
    updatedAt: spec.updatedAt ?? createdAt,
  };
  if (status === 'completed') envelope.result = { ...base, status: 'completed', output: `Done: ${marker}.` };
  if (status === 'drained') envelope.result = { ...base, status: 'stopped', reason: 'drained' };
  if (status === 'stopped') envelope.result = { ...base, status: 'stopped', reason: 'max-steps', stopDetails: { limit: 20 } };
  if (status === 'failed') {
    const error: SerializedError = { name: 'ModelCallError', code: 'model_call_failed', message: `503 for ${marker}` };
    // A result whose messages are not the whole transcript: a store must keep both as they are.
    envelope.result = { ...base, messages: messages.slice(0, -1), status: 'failed', error, retry: { cause: 'model_call_failed', phase: 'loop' } };
    envelope.retry = { cause: 'model_call_failed', phase: 'loop', error };
  }
  if (status === 'suspended') {
    envelope.result = { ...base, status: 'suspended', pendingApprovals, pendingClientCalls };
  }
  return envelope;
}

/** A deep copy through JSON: what a store is expected to give back for what it was given. */
export function jsonCopy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/**
 * Runs a scripted agent through `store` (parallel calls, a call that fails, an
 * approval that suspends the run, a resume that completes it) and returns a
 * JSON copy of every envelope the engine saved, in order. `afterSave` runs
 * after each save resolved, before the engine goes on.
 */
export async function recordEngineRun(
  store: AgentRunStore,
  options: { runId: string; scope: string; afterSave?: (saved: AgentRunEnvelope) => Promise<void> },
): Promise<AgentRunEnvelope[]> {
  const saved: AgentRunEnvelope[] = [];
  const recording: AgentRunStore = {
    load: (runId, loadOptions) => store.load(runId, loadOptions),
    async save(envelope, saveOptions) {
      const copy = jsonCopy(envelope);
      await store.save(envelope, saveOptions);
      saved.push(copy);
      await options.afterSave?.(copy);
    },
  };
  let tick = 0;
  const model = createMockModel({
    responses: [
      { toolCalls: [{ toolName: 'search', args: { q: 'fares', tags: ['rail', 'night'] } }, { toolName: 'search', args: { q: 'hotels' } }] },
      { text: 'One more check.', toolCalls: [{ toolName: 'flaky', args: { attempt: 1 } }] },
      { toolCalls: [{ toolName: 'book', args: { fare: 'NJ-402', seats: 2 } }] },
      { text: 'Booked the night train for two.' },
    ],
    generateToolCallId: (step, i) => `call_${step}_${i}`,
  });
  const agentOptions = {
    model,
    prompt: 'Book a night train to Vienna for two.',
    system: 'You book trains.',
    bindingId: 'conformance-trip-v1',
    session: { store: recording, runId: options.runId, scope: options.scope },
    deps: { clock: { now: () => 1_000 + tick++ }, generateId: () => `id-${tick++}` },
    tools: {
      search: {
        parameters: { type: 'object' as const },
        replay: 'idempotent' as const,
        execute: (args: { q: string }) => ({ results: [`${args.q}-1`, `${args.q}-2`], note: 'Zürich ✓' }),
      },
      flaky: { parameters: { type: 'object' as const }, execute: () => { throw new Error('upstream timeout'); } },
      book: { parameters: { type: 'object' as const }, needsApproval: true, execute: () => ({ booking: 'B-77', total: 129.5 }) },
    },
  };
  const first = await runAgent(agentOptions);
  if (first.status !== 'suspended') throw new CairnError('internal', `The scripted run should suspend on its approval; it ended ${first.status}.`);
  const approvalResponses = first.pendingApprovals.map((a) => ({ approvalId: a.approvalId, token: a.token, approved: true }));
  const done = await resumeAgent({ ...agentOptions, approvalResponses });
  if (done.status !== 'completed') {
    throw new CairnError('internal', `The scripted run should complete after its approval; it ended ${done.status}: ${JSON.stringify(done)}`);
  }
  return saved;
}

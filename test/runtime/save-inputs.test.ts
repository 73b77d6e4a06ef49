/**
 * A save made while one of the tool call's save legs runs (the `executing`
 * receipt's write, the raw result's commit, a batch call's checkpoint) holds
 * the call's arguments and its result once in the snapshot: the leg's input,
 * which the snapshot also carries, names the call and nothing more. And a
 * snapshot written when those inputs were the call's whole context still
 * resumes, the interrupted call reported as interrupted and never run twice.
 */
import { describe, expect, it } from 'vitest';
import { resumeAgent, runAgent, type AgentOptions, type AgentRunEnvelope, type AgentRunStore, type ResumeOptions } from '../../src/agent/index.js';
import { createMockModel } from '../../src/testing/index.js';

const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
const ARGS = `args-${'a'.repeat(3000)}`;
const RESULT = `result-${'r'.repeat(3000)}`;

const calls = (ids: string[]) => ({
  text: '',
  toolCalls: ids.map((id) => ({ toolCallId: id, toolName: 'put', args: { blob: ARGS, id } })),
  finishReason: 'tool-calls' as const,
  usage,
});
const answer = { text: 'done', toolCalls: [], finishReason: 'stop' as const, usage };

/** Keeps a JSON copy of every envelope saved (and hands the last one back on load). */
function recordingStore() {
  const saved: AgentRunEnvelope[] = [];
  const store: AgentRunStore = {
    load: async () => (saved.length > 0 ? JSON.parse(JSON.stringify(saved[saved.length - 1])) : undefined),
    save: async (envelope) => {
      saved.push(JSON.parse(JSON.stringify(envelope)));
    },
  };
  return { store, saved };
}

interface Persisted {
  input?: unknown;
  context?: unknown;
  children?: Record<string, { snapshot?: Persisted }>;
}

/** The invoked actors named `leg` running in a run snapshot, at any depth: each one's persisted snapshot, and its parent's. */
function legs(snapshot: Persisted | undefined, leg: string, out: { snapshot: Persisted; parent: Persisted }[] = []) {
  for (const [id, child] of Object.entries(snapshot?.children ?? {})) {
    if (id === leg && child?.snapshot) out.push({ snapshot: child.snapshot, parent: snapshot! });
    legs(child?.snapshot, leg, out);
  }
  return out;
}

const legsIn = (envelope: AgentRunEnvelope, leg: string) => legs(envelope.snapshot as Persisted, leg);

/** The inputs of the `leg` actors running in every saved snapshot, as JSON. */
const inputsOf = (saved: AgentRunEnvelope[], leg: string) =>
  saved.flatMap((e) => legsIn(e, leg)).map((l) => JSON.stringify(l.snapshot.input));

function options(store: AgentRunStore, ids: string[], project: boolean, effects: string[]): AgentOptions {
  return {
    model: createMockModel({ responses: [calls(ids), answer] }),
    prompt: 'Put.',
    session: { store, runId: 'inputs-1', scope: 's' },
    tools: {
      put: {
        parameters: { type: 'object' },
        execute: (args: { id: string }) => {
          effects.push(args.id);
          return RESULT;
        },
        ...(project ? { toModelOutput: (value: unknown) => String(value).slice(0, 10) } : {}),
      },
    },
  };
}

describe('the save legs take only what they read', () => {
  it('the executing receipt write and the result commit carry no arguments and no result in their inputs', async () => {
    const { store, saved } = recordingStore();
    const effects: string[] = [];
    const result = await runAgent(options(store, ['c1'], true, effects));
    expect(result.status).toBe('completed');
    expect(effects).toEqual(['c1']);

    const writes = inputsOf(saved, 'writeReceipt');
    const commits = inputsOf(saved, 'recordResult');
    expect(writes.length).toBeGreaterThan(0);
    expect(commits.length).toBeGreaterThan(0);
    for (const input of writes) expect(JSON.parse(input)).toEqual({ modelStep: 0, toolCallId: 'c1' });
    for (const input of commits) {
      expect(JSON.parse(input)).toEqual({ modelStep: 0, toolCallId: 'c1', toolName: 'put', receipt: { status: 'executed' } });
      expect(input).not.toContain(ARGS);
      expect(input).not.toContain(RESULT);
    }
    // The save made during the result commit still holds the result (in the call's own context).
    const during = saved.filter((e) => legsIn(e, 'recordResult').length > 0);
    for (const envelope of during) expect(JSON.stringify(envelope.snapshot)).toContain(RESULT);
  });

  it('a batch call checkpoint carries only the batch size in its input', async () => {
    const { store, saved } = recordingStore();
    const effects: string[] = [];
    const result = await runAgent(options(store, ['b1', 'b2'], false, effects));
    expect(result.status).toBe('completed');
    expect(effects.sort()).toEqual(['b1', 'b2']);
    const checkpoints = inputsOf(saved, 'checkpoint');
    expect(checkpoints.length).toBeGreaterThan(0);
    for (const input of checkpoints) expect(JSON.parse(input)).toEqual({ batchSize: 2 });
  });

  it('a snapshot whose receipt write took the whole context as input resumes, the call interrupted and not run again', async () => {
    const { store, saved } = recordingStore();
    const effects: string[] = [];
    await runAgent(options(store, ['c1'], false, effects));
    const executing = saved.find((e) => legsIn(e, 'writeReceipt').length > 0)!;
    expect(executing).toBeDefined();
    // Written the way earlier versions wrote it: the leg's input is the call's whole context.
    const old = JSON.parse(JSON.stringify(executing)) as AgentRunEnvelope;
    const [write] = legsIn(old, 'writeReceipt');
    write!.snapshot.input = JSON.parse(JSON.stringify(write!.parent.context));

    const resumed: string[] = [];
    const back: AgentRunStore = { load: async () => JSON.parse(JSON.stringify(old)), save: async () => undefined };
    const again = (extra: Partial<ResumeOptions>) =>
      resumeAgent({ ...options(back, ['c1'], false, resumed), model: createMockModel({ responses: [answer] }), ...extra } as ResumeOptions);
    const result = await again({});
    // The receipt was written before the crash, so the tool may have run: the call waits for an operator, not run again.
    expect(resumed).toEqual([]);
    if (result.status !== 'stopped') throw new Error(`the resume ended ${result.status}`);
    expect(result.reason).toBe('tool-reconciliation-required');
    expect(result.unknownEffects?.map((r) => r.toolCallId)).toEqual(['c1']);
    // The operator asks for it to run once more: it does, once.
    const retried = await again({ retryToolCallIds: ['c1'] });
    expect(retried.status).toBe('completed');
    expect(resumed).toEqual(['c1']);
  });
});

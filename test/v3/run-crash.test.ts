/**
 * The crash property for V3 runs: random runs (a context of one or two
 * sources, a working memory whose model adds notes over several steps, an
 * ordinary idempotent tool, sometimes a structured final answer) are driven
 * once without a fault, then once for EVERY save the fault-free drive made,
 * with that save failing before it landed or after it landed (the process
 * stops writing there, as a crash would). The operator then resumes until the
 * run ends.
 *
 * Invariants:
 *  1. Every working-memory patch is applied once: the final record holds each
 *     note once and its revision counts the notes.
 *  2. A step reopened after the crash reuses its stored package: every request
 *     is one the fault-free drive sent, byte for byte, and no source is asked
 *     again for a step whose package the crashed record held.
 *  3. The run ends as without the fault, with the same answer.
 *  4. After prune, no blob is left that no run points to.
 *
 * Re-run a failure with FC_SEED=<seed>; more scenarios with CAIRN_PROPERTY_RUNS.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInMemoryAgentRunStoreV3, resumeAgent, runAgent, type AgentResult, type AgentRunStoreV3 } from 'cairn/agent';
import { createSqliteAgentRunStoreV3, createSqliteOpsStore } from 'cairn/ops/sqlite';
import type { ModelRequest } from 'cairn/models';
import { createRagContextSource } from 'cairn/context';
import { createMockModel } from 'cairn/testing';
import { countingStoreV3 } from './run-helpers.js';

const NUM_RUNS = Math.max(12, Number(process.env.CAIRN_PROPERTY_RUNS ?? 0) || 0);
const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : Math.floor(Math.random() * 2 ** 31);

interface Scenario {
  notes: number;
  sources: number;
  lookups: number;
  structured: boolean;
}

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  notes: fc.integer({ min: 1, max: 3 }),
  sources: fc.integer({ min: 1, max: 2 }),
  lookups: fc.integer({ min: 0, max: 1 }),
  structured: fc.boolean(),
});

type Fault = { at: number; landed: boolean } | null;

interface Report {
  result: AgentResult<unknown>;
  saves: number;
  requests: string[];
  /** Sources asked again, after the crash, for a step whose package the crashed record held. */
  askedAgain: string[];
  notes: string[];
  revision: number;
  effects: number;
  digests: string[];
  unreferencedAfterPrune: string[];
}

type Open = () => { store: AgentRunStoreV3; close(): void };
const inMemory: Open = () => ({ store: createInMemoryAgentRunStoreV3({ clock: { now: () => 10 } }), close: () => undefined });

async function drive(scenario: Scenario, fault: Fault, open: Open = inMemory): Promise<Report> {
  const opened = open();
  try {
    return await driveOn(opened.store, scenario, fault);
  } finally {
    opened.close();
  }
}

async function driveOn(inner: AgentRunStoreV3, scenario: Scenario, fault: Fault): Promise<Report> {
  const runs = countingStoreV3(inner);
  let saveNumber = 0;
  let broken = false;
  const faulty = {
    ...runs,
    checkpointVersion: 3 as const,
    save: async (...args: Parameters<typeof runs.save>) => {
      saveNumber++;
      if (broken) throw new Error('the process is gone');
      if (fault && saveNumber === fault.at) {
        broken = true;
        if (fault.landed) await runs.save(...args);
        throw new Error(`injected crash at save ${saveNumber}`);
      }
      return runs.save(...args);
    },
  };
  const stepsAsked = new Map<string, number>();
  const sources = Array.from({ length: scenario.sources }, (_, i) => createRagContextSource({
    name: `s${i}`,
    retrieve: ({ step, phase }) => {
      const key = `${i}:${step}:${phase}`;
      stepsAsked.set(key, (stepsAsked.get(key) ?? 0) + 1);
      return [{ text: `fact ${i}`, index: 0, score: 1 - i / 10 }];
    },
  }));
  const requests: string[] = [];
  let effects = 0;
  const effectKeys = new Set<string>();
  // The model adds one note a step, then looks up, then answers: decided from the history, as a replayed step would be.
  const answer = (request: ModelRequest) => {
    requests.push(JSON.stringify(request.messages));
    const done = request.messages.filter((m) => m.role === 'tool').length;
    if (done < scenario.notes) {
      return { toolCalls: [{ toolName: 'working_memory_add', args: { text: `note ${done}` }, toolCallId: `n${done}` }] };
    }
    if (done < scenario.notes + scenario.lookups) return { toolCalls: [{ toolName: 'lookup', args: {}, toolCallId: `l${done}` }] };
    return { text: scenario.structured ? '{"ok":true}' : 'done' };
  };
  const options = {
    checkpointVersion: 3 as const,
    session: { store: faulty, runId: 'crash', scope: 's' },
    prompt: 'work',
    context: { sources },
    workingMemory: { create: { scope: 's', now: 1 }, tools: true },
    tools: {
      lookup: {
        parameters: { type: 'object' }, replay: 'idempotent' as const,
        execute: (_: unknown, ctx: { toolCallId: string; modelStep: number }) => {
          const key = `${ctx.modelStep}:${ctx.toolCallId}`;
          if (!effectKeys.has(key)) effects++;
          effectKeys.add(key);
          return 'found';
        },
      },
    },
    ...(scenario.structured ? { output: { schema: { type: 'object' }, validate: (v: unknown) => v } } : {}),
    maxSteps: 10,
  };
  const model = () => createMockModel({ strict: false, responses: [answer] });
  let result = await runAgent({ ...options, model: model() } as never) as AgentResult<unknown>;
  const totalSaves = saveNumber;
  // The steps whose package the crashed record holds: no source may be asked for them again.
  const crashed = await inner.load('crash');
  const durableSteps = new Set((crashed?.context?.steps ?? []).map((s) => `${s.step}:${s.phase}`));
  const askedBefore = new Map(stepsAsked);
  for (let legs = 0; broken && legs < 3; legs++) {
    broken = false;
    saveNumber = Number.MAX_SAFE_INTEGER / 2;
    if ((await inner.load('crash')) === undefined) result = await runAgent({ ...options, model: model() } as never) as AgentResult<unknown>;
    else result = await resumeAgent({ ...options, model: model() } as never) as AgentResult<unknown>;
  }
  const record = (await inner.load('crash'))!;
  const digests = [...new Set(record.context!.steps.map((s) => s.blob.digest))];
  const wm = record.workingMemory as unknown as { revision: number; snapshot: { notes: Array<{ text: string }> } };
  await inner.prune({ terminalBefore: Number.MAX_SAFE_INTEGER });
  const unreferenced: string[] = [];
  for (const d of digests) if ((await inner.getBlob(d)).status !== 'missing') unreferenced.push(d);
  const askedAgain = [...stepsAsked].filter(([key, n]) => durableSteps.has(key.slice(key.indexOf(':') + 1)) && n > (askedBefore.get(key) ?? 0))
    .map(([key]) => key);
  return {
    result, saves: totalSaves, requests, askedAgain, notes: wm.snapshot.notes.map((n) => n.text), revision: wm.revision,
    effects, digests, unreferencedAfterPrune: unreferenced,
  };
}

async function property(numRuns: number, open: Open, name: string): Promise<void> {
    let drives = 0;
    await fc.assert(fc.asyncProperty(scenarioArb, async (scenario) => {
      const ref = await drive(scenario, null, open);
      expect(ref.result.status).toBe('completed');
      for (let at = 1; at <= ref.saves; at++) {
        for (const landed of [false, true]) {
          const run = await drive(scenario, { at, landed }, open);
          drives++;
          const where = `scenario ${JSON.stringify(scenario)}, save ${at} ${landed ? 'landed' : 'lost'}`;
          // (3) The same end.
          expect(run.result.status, where).toBe('completed');
          expect((run.result as { text: string }).text, where).toBe((ref.result as { text: string }).text);
          // (1) Each patch once.
          expect(run.notes, where).toEqual(ref.notes);
          expect(run.revision, where).toBe(scenario.notes);
          expect(run.effects, where).toBe(scenario.lookups);
          // (2) No source asked twice for a step; a step asked twice got the same request.
          expect(run.askedAgain, where).toEqual([]);
          expect(new Set(run.requests), where).toEqual(new Set(ref.requests));
          // (4) Prune leaves no blob that no run points to.
          expect(run.unreferencedAfterPrune, where).toEqual([]);
        }
      }
    }), { numRuns, seed: SEED, verbose: 1 });
    console.log(`V3 crash property (${name}): ${numRuns} scenarios, ${drives} faulted drives, seed ${SEED} (FC_SEED=${SEED} to run it again)`);
}

const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

/** A fresh SQLite file (in one scratch directory) for every drive. */
function sqliteFiles(): Open {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-v3-crash-'));
  scratch.push(dir);
  let n = 0;
  return () => {
    const ops = createSqliteOpsStore({ path: join(dir, `runs-${n++}.sqlite`) });
    return { store: createSqliteAgentRunStoreV3(ops), close: () => ops.close() };
  };
}

describe('the crash property of V3 runs', () => {
  console.log(`V3 crash property seed: ${SEED}`);
  it('applies each working-memory patch once and reuses a reopened step\'s package, whatever save fails (in memory)', async () => {
    await property(NUM_RUNS, inMemory, 'in memory');
  }, 120_000);
  it('the same on SQLite files', async () => {
    await property(Math.max(3, Math.floor(NUM_RUNS / 4)), sqliteFiles(), 'SQLite');
  }, 120_000);
});

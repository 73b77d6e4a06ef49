/**
 * The engine section of `npm run bench`: CPU time per step of a tool loop run
 * with no session (no store, no saves), for 100- and 1,000-step loops, next to
 * a bare XState loop of the same shape measured in the same run
 * (bench/xstate-baseline.ts). CPU time is the process's (process.cpuUsage:
 * user + system, every thread: the collector and the compiler included), so a
 * step's figure does not move with how busy the other core is.
 *
 * Alone: `npm run bench -- --engine` (or CAIRN_BENCH=engine npm run bench).
 * CPU profile: add `--profile`; a .cpuprofile for each N is written (open it
 * in Chrome's DevTools or VS Code) and the functions that cost most are
 * printed, with what grows from N = 100 to N = 1,000.
 */
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInMemoryAgentRunStore, type AgentRunStore } from 'cairn/agent';
import { toolLoop, type LoopModel } from './tool-loop.js';
import { baselineLoop } from './xstate-baseline.js';

/** The target the issue set: CPU per step at N = 100, and how far N = 1,000 may drift from it. */
export const TARGET_US_PER_STEP = 300;
export const TARGET_GROWTH = 1.1;

const SIZES = [100, 1_000] as const;
/** Timed repetitions per size (the median is reported); a 1,000-step loop is long enough to need fewer. */
const REPETITIONS: Record<number, number> = { 100: 31, 1_000: 7 };
/** The transcript baseline is there to show a growth, not to be read closely: at N = 1,000 one loop takes seconds. */
const TRANSCRIPT_REPETITIONS: Record<number, number> = { 100: 5, 1_000: 1 };
/** Untimed loops first, so V8 has optimized the code both loops run (the first loops run several times slower). */
const WARMUP = { engine: 60, baseline: 60 };

type Loop = (steps: number) => Promise<void>;

/** A store that keeps nothing: every envelope a session saves is built, and none is copied or written. */
export const discard: AgentRunStore = { load: async () => undefined, save: async () => undefined };

/**
 * The tool loop. `session`: none (no store, no saves); 'in-memory', a new in-memory store a loop, so every save is
 * copied and kept as a test or a demo runs it; 'discard', a store that keeps nothing, so what the figure adds to the
 * loop without a session is the session's own work (the checkpoints and their envelopes), no store's.
 */
const engine = (model: LoopModel, session?: 'in-memory' | 'discard'): Loop => async (steps) => {
  const store = session === 'in-memory' ? createInMemoryAgentRunStore() : session === 'discard' ? discard : null;
  const result = await toolLoop(store, `bench-engine-${steps}`, steps, model);
  if (result.status !== 'completed' || result.steps !== steps + 1) {
    throw new Error(`engine: the ${steps}-step loop ended ${result.status} after ${result.steps} steps`);
  }
};

const baseline = (keepTranscript: boolean): Loop => async (steps) => {
  const checkpoints = await baselineLoop(steps, keepTranscript);
  if (checkpoints !== 2 * steps) throw new Error(`baseline: ${checkpoints} checkpoints for ${steps} steps`);
};

/** µs of process CPU time per step of one loop. */
export async function cpuPerStep(loop: Loop, steps: number): Promise<number> {
  const before = process.cpuUsage();
  await loop(steps);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / steps;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export interface EngineFigures {
  /** Median µs of CPU per step, by loop and size. */
  engine: Record<number, number>;
  /** The same loop answered by createMockModel, which records every request for the tests. */
  engineWithMock: Record<number, number>;
  /** The bare-model loop with a session on the in-memory store (every save copied and kept). */
  engineInMemory: Record<number, number>;
  /** The bare-model loop with a session whose store keeps nothing (every envelope built): the session's own cost. */
  engineSession: Record<number, number>;
  baseline: Record<number, number>;
  baselineWithTranscript: Record<number, number>;
  repetitions: Record<number, number>;
}

/**
 * Measures the loops at each size. The engine's and the bare loop's
 * repetitions alternate, so a slower minute of the machine weighs on both
 * alike; the transcript loop runs after them.
 */
export async function measureEngine(): Promise<EngineFigures> {
  const loops = {
    engine: engine('bare'), engineWithMock: engine('mock'), engineInMemory: engine('bare', 'in-memory'), engineSession: engine('bare', 'discard'),
    baseline: baseline(false), baselineWithTranscript: baseline(true),
  };
  // The loops measured together, in the order each repetition runs them (the engine's next to the bare loop's).
  const together = ['engine', 'baseline', 'engineWithMock', 'engineInMemory', 'engineSession'] as const;
  for (const name of together) for (let i = 0; i < (name === 'baseline' ? WARMUP.baseline : WARMUP.engine); i++) await loops[name](100);
  const figures: EngineFigures = {
    engine: {}, engineWithMock: {}, engineInMemory: {}, engineSession: {}, baseline: {}, baselineWithTranscript: {}, repetitions: REPETITIONS,
  };
  for (const steps of SIZES) {
    const samples = new Map(together.map((name) => [name, [] as number[]]));
    for (let i = 0; i < REPETITIONS[steps]!; i++) {
      for (const name of together) samples.get(name)!.push(await cpuPerStep(loops[name], steps));
    }
    for (const name of together) figures[name][steps] = median(samples.get(name)!);
  }
  // Last and apart: a transcript loop leaves a heap of garbage (seconds of it at N = 1,000), which the
  // collector would otherwise charge to whichever loop ran next.
  for (let i = 0; i < WARMUP.baseline; i++) await loops.baselineWithTranscript(100);
  for (const steps of SIZES) {
    const samples: number[] = [];
    for (let i = 0; i < TRANSCRIPT_REPETITIONS[steps]!; i++) samples.push(await cpuPerStep(loops.baselineWithTranscript, steps));
    figures.baselineWithTranscript[steps] = median(samples);
  }
  return figures;
}

export function printEngine(f: EngineFigures): void {
  const us = (n: number) => n.toFixed(0);
  const x = (n: number) => `${n.toFixed(2)}x`;
  const [small, large] = SIZES;
  console.log(
    `\nEngine CPU per step, no store (process CPU time, µs per step; median of ${f.repetitions[small]} loops at N = ${small}, ` +
    `${f.repetitions[large]} at N = ${large.toLocaleString('en')}), against a bare XState loop of the same shape measured in the same run\n`,
  );
  console.log(`| loop | N = ${small} | N = ${large.toLocaleString('en')} | ${large.toLocaleString('en')} / ${small} | vs baseline at N = ${small} | vs baseline at N = ${large.toLocaleString('en')} |`);
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  const row = (label: string, r: Record<number, number>) =>
    console.log(`| ${label} | ${us(r[small]!)} | ${us(r[large]!)} | ${x(r[large]! / r[small]!)} | ${x(r[small]! / f.baseline[small]!)} | ${x(r[large]! / f.baseline[large]!)} |`);
  row('Cairn engine (runAgent, no session, a bare scripted model)', f.engine);
  row('the same, answered by createMockModel (records each request)', f.engineWithMock);
  row('the same, with a session on the in-memory store (every save copied and kept)', f.engineInMemory);
  row('the same, with a session whose store keeps nothing (every envelope built, none copied)', f.engineSession);
  row('baseline: bare XState, 2 checkpoints a step', f.baseline);
  row(`baseline with its transcript in context (${TRANSCRIPT_REPETITIONS[small]} and ${TRANSCRIPT_REPETITIONS[large]} loops)`, f.baselineWithTranscript);
  console.log(
    `\nWhat a session adds to a step (its checkpoints and their envelopes, no store's work: the row whose store keeps nothing, less ` +
    `the row without a session): ${us(f.engineSession[small]! - f.engine[small]!)} µs at N = ${small}, ` +
    `${us(f.engineSession[large]! - f.engine[large]!)} µs at N = ${large.toLocaleString('en')}.`,
  );
  const perStep = f.engine[small]!;
  const growth = f.engine[large]! / perStep;
  const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
  console.log(
    `\nTarget: at most ${TARGET_US_PER_STEP} µs per step at N = ${small}: ${us(perStep)} µs, ${verdict(perStep <= TARGET_US_PER_STEP)}. ` +
    `N = ${large.toLocaleString('en')} within ${TARGET_GROWTH}x of N = ${small}: ${x(growth)}, ${verdict(growth <= TARGET_GROWTH)}.`,
  );
  console.log(
    'A step: one scripted model turn with one tool call, the tool returning at once, its result. The baseline: promise actors for the ' +
    'turn, the tool and two checkpoints (getPersistedSnapshot copied to JSON); its context keeps the last turn and result only.',
  );
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** Self time by function (file:line function), in µs, from a V8 CPU profile. */
export function selfTimes(profile: CpuProfile): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const out = new Map<string, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    const node = byId.get(samples[i]!);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const file = url.replace(/^file:\/\//, '').replace(`${process.cwd()}/`, '');
    // Code that tsx compiled reports no useful line: the file and the function name say where.
    const where = lineNumber > 0 ? `${file}:${lineNumber + 1}` : file;
    const key = url ? `${where} ${functionName || '(anonymous)'}` : functionName || '(anonymous)';
    out.set(key, (out.get(key) ?? 0) + (deltas[i + 1] ?? deltas[i] ?? 0));
  }
  return out;
}

/**
 * Profiles the engine loop at each size (sampling every 50 µs, after the same
 * warm-up as the timed run), writes each profile to a file, and prints the
 * top functions by self time per step, and those whose cost per step grows
 * most from the first size to the second.
 */
export async function profileEngine(dir = tmpdir()): Promise<void> {
  const engineLoop = engine('bare');
  for (let i = 0; i < WARMUP.engine; i++) await engineLoop(100);
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 50 });
  const perStep: Record<number, Map<string, number>> = {};
  const loops: Record<number, number> = { 100: 20, 1_000: 2 };
  for (const steps of SIZES) {
    await session.post('Profiler.start');
    for (let i = 0; i < loops[steps]!; i++) await engineLoop(steps);
    const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile };
    const path = join(dir, `cairn-engine-${steps}.cpuprofile`);
    writeFileSync(path, JSON.stringify(profile));
    const self = selfTimes(profile);
    const total = [...self.values()].reduce((a, b) => a + b, 0);
    const scale = loops[steps]! * steps;
    perStep[steps] = new Map([...self].map(([k, v]) => [k, v / scale]));
    console.log(`\nN = ${steps}: ${path} (${loops[steps]} loops; ${(total / scale).toFixed(0)} µs sampled a step). Top self time:\n`);
    console.log('| function | µs/step | share |');
    console.log('| --- | ---: | ---: |');
    for (const [key, value] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25)) {
      console.log(`| ${key} | ${(value / scale).toFixed(1)} | ${((100 * value) / total).toFixed(1)}% |`);
    }
  }
  session.disconnect();
  const [small, large] = SIZES;
  const grown = [...perStep[large]!]
    .map(([key, value]) => [key, value - (perStep[small]!.get(key) ?? 0)] as const)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 15);
  console.log(`\nWhat grows with N: µs per step at N = ${large.toLocaleString('en')} less at N = ${small}\n`);
  console.log(`| function | N = ${small} | N = ${large.toLocaleString('en')} | growth |`);
  console.log('| --- | ---: | ---: | ---: |');
  for (const [key, growth] of grown) {
    console.log(`| ${key} | ${(perStep[small]!.get(key) ?? 0).toFixed(1)} | ${perStep[large]!.get(key)!.toFixed(1)} | +${growth.toFixed(1)} |`);
  }
}

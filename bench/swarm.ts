/**
 * The cost of the swarm scheduler (docs/swarm.md): a 10-task DAG (five
 * independent tasks, then five that each depend on one of them) run by
 * runAgentGroup, against the same 10 runs made with runAgent one after
 * another, in dependency order, on the same kind of store. Each task is one
 * tool step and an answer. Rounds alternate, so the machine's noise falls on
 * both; the table gives the median CPU time of this process and wall time per
 * DAG, their ratio, and the writes each made (the swarm's own saves and
 * journal events beside the runs' saves). In memory and on an SQLite file
 * (the swarm on its own store, the plain runs on the ops store).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInMemoryAgentRunStore, runAgent, type AgentRunStore, type AgentTool } from 'cairn/agent';
import type { LanguageModel, ModelRequest, ModelResponse } from 'cairn/models';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createInMemorySwarmStore, runAgentGroup, type SwarmStore, type SwarmTaskSpec } from 'cairn/swarm';
import { createSqliteSwarmStore } from 'cairn/swarm/sqlite';
import { alternateRounds } from './rounds.js';

const ROUNDS = 25;
const WARMUP = 5;
const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };

const model: LanguageModel = {
  specificationVersion: 'cairn-model-1',
  provider: 'bench',
  modelId: 'swarm',
  async doGenerate(request: ModelRequest): Promise<ModelResponse> {
    if (request.messages.some((m) => m.role === 'tool')) return { text: 'done', toolCalls: [], finishReason: 'stop', usage };
    return { text: '', toolCalls: [{ toolCallId: 'c0', toolName: 'work', args: { n: 1 } }], finishReason: 'tool-calls', usage };
  },
};
const work: AgentTool = { parameters: { type: 'object', properties: { n: { type: 'number' } } }, execute: async () => ({ ok: true }) };
const agent = { model, tools: { work } };
const TASKS: SwarmTaskSpec[] = [
  ...Array.from({ length: 5 }, (_, i) => ({ id: `first${i}`, agent, input: `first ${i}` })),
  ...Array.from({ length: 5 }, (_, i) => ({ id: `then${i}`, agent, input: `then ${i}`, dependsOn: [`first${i}`] })),
];

interface Sample { cpuMs: number; wallMs: number; writes: number }

function counted(store: AgentRunStore, count: { n: number }): AgentRunStore {
  return { load: (id, o) => store.load(id, o), save: (e, o) => { count.n += 1; return store.save(e, o); } };
}

function countedSwarm(store: SwarmStore, count: { n: number }): SwarmStore {
  return {
    runs: counted(store.runs, count),
    loadSwarm: (id, o) => store.loadSwarm(id, o),
    saveSwarm: (r, e) => { count.n += 1; return store.saveSwarm(r, e); },
    readJournal: (id, o) => store.readJournal(id, o),
    writeBlackboard: (id, w) => { count.n += 1; return store.writeBlackboard(id, w); },
    readBlackboard: (id, k) => store.readBlackboard(id, k),
  };
}

async function timed(body: (count: { n: number }) => Promise<void>): Promise<Sample> {
  const count = { n: 0 };
  const cpu = process.cpuUsage();
  const wall = performance.now();
  await body(count);
  const used = process.cpuUsage(cpu);
  return { cpuMs: (used.user + used.system) / 1000, wallMs: performance.now() - wall, writes: count.n };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export interface SwarmBenchRow { store: string; swarm: Sample; runs: Sample }

async function measureOn(label: string, swarmStore: () => SwarmStore, runStore: () => AgentRunStore): Promise<SwarmBenchRow> {
  const group = (round: number) => timed(async (count) => {
    const result = await runAgentGroup({
      session: { store: countedSwarm(swarmStore(), count), swarmId: `bench-${round}`, scope: 'bench' }, tasks: TASKS, concurrency: 1, blackboard: false,
    });
    if (result.status !== 'completed') throw new Error(`swarm ended ${result.status}`);
  });
  const oneByOne = (round: number) => timed(async (count) => {
    const store = counted(runStore(), count);
    for (const task of TASKS) {
      const result = await runAgent({ ...agent, prompt: task.input as string, session: { store, runId: `bench-${round}.${task.id}`, scope: 'bench' } });
      if (result.status !== 'completed') throw new Error(`run ended ${result.status}`);
    }
  });
  const { swarm, runs } = await alternateRounds(['swarm', 'runs'] as const, { warmup: WARMUP, measured: ROUNDS },
    (kind, round) => (kind === 'swarm' ? group(round) : oneByOne(round)));
  const med = (xs: Sample[]): Sample => ({ cpuMs: median(xs.map((x) => x.cpuMs)), wallMs: median(xs.map((x) => x.wallMs)), writes: median(xs.map((x) => x.writes)) });
  return { store: label, swarm: med(swarm), runs: med(runs) };
}

export async function measureSwarm(): Promise<SwarmBenchRow[]> {
  const rows = [await measureOn('in-memory', () => createInMemorySwarmStore(), () => createInMemoryAgentRunStore())];
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-swarm-'));
  const swarmFile = createSqliteSwarmStore({ path: join(dir, 'swarm.sqlite') });
  const ops = createSqliteOpsStore({ path: join(dir, 'ops.sqlite') });
  try {
    rows.push(await measureOn('sqlite', () => swarmFile, () => ops.agentRuns));
  } finally {
    swarmFile.close();
    ops.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

export function printSwarm(rows: SwarmBenchRow[]): void {
  console.log(`\nSwarm: a 10-task DAG by runAgentGroup (concurrency 1) against the same 10 runs by runAgent, median of ${ROUNDS} alternating rounds`);
  console.log('| store | swarm CPU ms | runs CPU ms | CPU ratio | swarm wall ms | runs wall ms | wall ratio | swarm writes | runs writes |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    console.log(`| ${r.store} | ${r.swarm.cpuMs.toFixed(1)} | ${r.runs.cpuMs.toFixed(1)} | ${(r.swarm.cpuMs / r.runs.cpuMs).toFixed(2)} | ${r.swarm.wallMs.toFixed(1)} | `
      + `${r.runs.wallMs.toFixed(1)} | ${(r.swarm.wallMs / r.runs.wallMs).toFixed(2)} | ${r.swarm.writes} | ${r.runs.writes} |`);
  }
}

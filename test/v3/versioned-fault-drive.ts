/**
 * The world of the versioned-memory crash property (test/property/versioned-memory-crash.test.ts)
 * and its targeted cases (test/v3/versioned-fault*.test.ts): a scripted V3 run whose model writes
 * memory through the session's tools (memory_remember / memory_revise / memory_retract, beside an
 * ordinary idempotent tool) and, when asked, extracts its turns; the run store and the versioned
 * memory store wrapped so that one chosen write fails, and a careful operator (resume, a fresh
 * process, reconcileAgentRun with the same memory store) that goes on until the run has settled.
 *
 * Faults:
 *  - `save`:   the Nth save of the run store throws, before it landed (`lost`) or after (`landed`);
 *              the process lives on.
 *  - `commit`: the Nth commit of the memory store throws before it applied anything (`before`), or
 *              after it applied (`after`: the commit landed, the caller sees a throw, a lost
 *              acknowledgment); the process lives on.
 *  - `kill`:   the process dies at the Nth save (before or after it landed) or right after the Nth
 *              memory commit landed: every call of that process to either store never settles, the
 *              run is abandoned where it stood, and a fresh process (new store objects over the same
 *              data, a new memory session, a new model) takes over.
 */
import fc from 'fast-check';
import {
  createInMemoryAgentRunStoreV3, reconcileAgentRun, resumeAgent, runAgent, type AgentResult, type AgentRunEnvelopeV3,
  type AgentRunSaveOptionsV3, type AgentRunStoreV3,
} from 'cairn/agent';
import {
  createInMemoryVersionedMemoryStore, createMemorySession, type VersionedMemoryCommitInput,
  type VersionedMemoryRecord, type VersionedMemoryStore,
} from 'cairn/memory/versioned';
import type { ModelRequest } from 'cairn/models';
import { createMockModel, type MockTurn } from 'cairn/testing';

export const RUN_ID = 'vm-1';
export const SCOPE = 'acme';
export const MEMORY_SCOPE = { userId: 'ada' };

/** One tool call of a model turn. `target` is the index of a seeded record (revise, retract). */
export type Call = { kind: 'remember' } | { kind: 'lookup' } | { kind: 'revise'; target: number } | { kind: 'retract'; target: number };

export interface Scenario {
  /** Records committed before the run (not faulted), the targets of revise and retract. */
  seeded: number;
  /** The model's tool turns, then it answers. */
  turns: Call[][];
  extract: boolean;
}

const rawCallArb = fc.constantFrom<Call['kind']>('remember', 'remember', 'lookup', 'revise', 'retract');

/** Turns of one or two calls; revise and retract aim at a seeded record still active, and never twice at one in a turn. */
export const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  seeded: fc.integer({ min: 0, max: 2 }),
  turns: fc.array(fc.array(rawCallArb, { minLength: 1, maxLength: 2 }), { minLength: 1, maxLength: 3 }),
  extract: fc.boolean(),
}).map(({ seeded, turns, extract }) => {
  const retracted = new Set<number>();
  const out: Call[][] = turns.map((turn) => {
    const used = new Set<number>();
    return turn.map((kind): Call => {
      if (kind === 'remember' || kind === 'lookup') return { kind };
      let target = -1;
      for (let i = 0; i < seeded; i++) if (!retracted.has(i) && !used.has(i)) { target = i; break; }
      if (target < 0) return { kind: 'remember' };
      used.add(target);
      if (kind === 'retract') retracted.add(target);
      return { kind, target };
    });
  });
  return { seeded, turns: out, extract };
});

export const describeScenario = (s: Scenario) =>
  `seeded ${s.seeded}, turns ${s.turns.map((t) => t.map((c) => ('target' in c ? `${c.kind}#${c.target}` : c.kind)).join('+')).join(' / ')}, extract ${s.extract}`;

export type Fault =
  | { kind: 'none' }
  | { kind: 'save'; at: number; landed: boolean }
  | { kind: 'commit'; at: number; landed: boolean }
  | { kind: 'kill'; on: 'save' | 'commit'; at: number; landed: boolean };

/** Every fault of a drive that made `saves` saves and `commits` memory commits. */
export function everyFault(saves: number, commits: number): Fault[] {
  const out: Fault[] = [];
  for (let at = 1; at <= saves; at++) {
    for (const landed of [false, true]) {
      out.push({ kind: 'save', at, landed });
      out.push({ kind: 'kill', on: 'save', at, landed });
    }
  }
  for (let at = 1; at <= commits; at++) {
    for (const landed of [false, true]) out.push({ kind: 'commit', at, landed });
    out.push({ kind: 'kill', on: 'commit', at, landed: true });
  }
  return out;
}

/** What the stores hold after a drive, and what happened on the way. */
export interface Report {
  result: AgentResult<unknown> | undefined;
  record: AgentRunEnvelopeV3 | undefined;
  saves: number;
  commits: number;
  /** Every revision the memory store holds, of every record. */
  revisions: VersionedMemoryRecord[];
  scopeRevision: number;
  /** Operation ids with a stored receipt, and what each receipt says it wrote. */
  receipts: Map<string, { planned: number; records: { id: string; revision: number; op: string }[]; scopeRevision: number }>;
  /** Executions of the ordinary tool, by call. */
  effects: Map<string, number>;
  /**
   * In each save that landed, each memory tool write's receipt status and its intent's status
   * (`executing>intended`, ...; `none` when the save holds no intent of the call).
   */
  pairs: Set<string>;
  /** The record as the first leg left it (before any resume or reconciliation). */
  afterFirstLeg: AgentRunEnvelopeV3 | undefined;
  /** Whether the fault fired. */
  fired: boolean;
  legs: number;
  restarts: number;
  reconciliations: unknown[];
  trace: string[];
}

/** The data that outlives a process: the run store and the memory store. */
export interface Backend {
  name: string;
  /** Store objects over the data, as a process opens them (a fresh process calls it again). */
  open(): { runs: AgentRunStoreV3; memory: VersionedMemoryStore };
  close(): Promise<void> | void;
}

export type OpenBackend = () => Promise<Backend> | Backend;

export const inMemoryBackend: OpenBackend = () => {
  const runs = createInMemoryAgentRunStoreV3({ clock: { now: () => 10 } });
  const memory = createInMemoryVersionedMemoryStore();
  return { name: 'in memory', open: () => ({ runs, memory }), close: () => undefined };
};

const never = <T>() => new Promise<T>(() => undefined);

/** One simulated process: its store wrappers share its fault counters and die together. */
class Process {
  dead = false;
  private announce!: () => void;
  readonly died = new Promise<void>((resolve) => (this.announce = resolve));
  constructor(
    readonly counters: { saves: number; commits: number }, readonly fault: Fault, readonly state: { fired: boolean; trace: string[] },
    readonly onSaved: (envelope: AgentRunEnvelopeV3) => void = () => undefined,
  ) {}

  kill(): Promise<never> {
    this.dead = true;
    this.state.fired = true;
    this.announce();
    return never();
  }

  /** An answer that arrives after the death is never delivered. */
  async deliver<T>(work: Promise<T>): Promise<T> {
    let value: T;
    try {
      value = await work;
    } catch (error) {
      if (this.dead) return never();
      throw error;
    }
    if (this.dead) return never();
    return value;
  }

  wrapRuns(inner: AgentRunStoreV3): AgentRunStoreV3 {
    const save = async (envelope: AgentRunEnvelopeV3, options?: AgentRunSaveOptionsV3): Promise<void> => {
      if (this.dead) return never();
      const n = ++this.counters.saves;
      const f = this.fault;
      if (!this.state.fired && (f.kind === 'save' || (f.kind === 'kill' && f.on === 'save')) && f.at === n) {
        this.state.trace.push(`${f.kind} at save ${n} (${envelope.status}, ${f.landed ? 'landed' : 'lost'})`);
        if (f.landed) await inner.save(envelope, options).catch(() => undefined);
        if (f.kind === 'kill') return this.kill();
        this.state.fired = true;
        throw new Error(`injected: save ${n} failed`);
      }
      const saved = this.deliver(inner.save(envelope, options));
      await saved;
      this.onSaved(envelope);
      return saved;
    };
    return new Proxy(inner, {
      get: (target, key, receiver) => {
        if (key === 'save') return save;
        const value = Reflect.get(target, key, receiver) as unknown;
        if (typeof value !== 'function' || key === 'now') return typeof value === 'function' ? value.bind(target) : value;
        return (...args: unknown[]) => (this.dead ? never() : this.deliver(Promise.resolve((value as (...a: unknown[]) => unknown).apply(target, args))));
      },
    });
  }

  wrapMemory(inner: VersionedMemoryStore): VersionedMemoryStore {
    const commit = async (input: VersionedMemoryCommitInput) => {
      if (this.dead) return never();
      const n = ++this.counters.commits;
      const f = this.fault;
      if (!this.state.fired && (f.kind === 'commit' || (f.kind === 'kill' && f.on === 'commit')) && f.at === n) {
        this.state.trace.push(`${f.kind} at commit ${n} (${input.operationId}, ${f.landed ? 'landed' : 'lost'})`);
        if (f.landed) await inner.commit(input).catch(() => undefined);
        if (f.kind === 'kill') return this.kill();
        this.state.fired = true;
        throw new Error(`injected: memory commit ${n} failed`);
      }
      return this.deliver(inner.commit(input));
    };
    return new Proxy(inner, {
      get: (target, key, receiver) => {
        if (key === 'commit') return commit;
        const value = Reflect.get(target, key, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => (this.dead ? never() : this.deliver(Promise.resolve((value as (...a: unknown[]) => unknown).apply(target, args))));
      },
    });
  }
}

const seedText = (i: number) => `seed fact ${i}`;
const seedId = (i: number) => `seed-${i}`;

/** The model: turn k's calls when the history holds k assistant turns, then an answer. Decided from the history, as a replayed step is. */
function scriptedModel(scenario: Scenario) {
  const answer = (request: ModelRequest): MockTurn => {
    const turn = request.messages.filter((m) => m.role === 'assistant').length;
    const calls = scenario.turns[turn];
    if (calls === undefined) return { text: 'All noted.' };
    return {
      toolCalls: calls.map((call, i): NonNullable<MockTurn['toolCalls']>[number] => {
        const toolCallId = `t${turn}c${i}`;
        switch (call.kind) {
          case 'remember': return { toolName: 'memory_remember', args: { text: `fact ${turn}.${i}` }, toolCallId };
          case 'lookup': return { toolName: 'lookup', args: {}, toolCallId };
          case 'revise': return { toolName: 'memory_revise', args: { id: seedId(call.target), text: `revised ${call.target} at ${turn}` }, toolCallId };
          case 'retract': return { toolName: 'memory_retract', args: { id: seedId(call.target) }, toolCallId };
        }
      }),
    };
  };
  return createMockModel({ strict: false, responses: [answer] });
}

/** An extraction LLM: one fact citing the first message. */
const memoryLlm = async () => '{"facts":[{"text":"Ada likes tea.","sources":["s0"]}]}';

export interface DriveOptions {
  /** Wraps the memory store each process opens (a planted bug). */
  wrapMemory?: (store: VersionedMemoryStore) => VersionedMemoryStore;
}

/** Drives the scenario with the fault, then the operator until the run settled; reads back what the stores hold. */
export async function drive(scenario: Scenario, fault: Fault, open: OpenBackend = inMemoryBackend, options: DriveOptions = {}): Promise<Report> {
  const backend = await open();
  try {
    return await driveOn(backend, scenario, fault, options);
  } finally {
    await backend.close();
  }
}

const TERMINAL = new Set(['completed', 'stopped', 'failed']);

async function driveOn(backend: Backend, scenario: Scenario, fault: Fault, options: DriveOptions): Promise<Report> {
  const counters = { saves: 0, commits: 0 };
  const state = { fired: false, trace: [] as string[] };
  const effects = new Map<string, number>();
  let ids = 0;
  // Seeds, outside any fault; the same objects read the stores at the end.
  const outside = backend.open();
  {
        for (let i = 0; i < scenario.seeded; i++) {
      await outside.memory.commit({
        scope: MEMORY_SCOPE, operationId: `seed-op-${i}`, requestDigest: `sha256:${'0'.repeat(64)}`, at: 1,
        mutations: [{ op: 'add', id: seedId(i), text: seedText(i), origin: 'explicit' }],
      });
    }
  }
  const open = (proc: Process) => {
    const stores = backend.open();
    const runs = proc.wrapRuns(stores.runs);
    const session = createMemorySession({
      store: proc.wrapMemory(options.wrapMemory ? options.wrapMemory(stores.memory) : stores.memory), scope: MEMORY_SCOPE, llm: memoryLlm, generateId: () => `r${ids++}`, clock: { now: () => 5 },
    });
    const runOptions = {
      checkpointVersion: 3 as const,
      session: { store: runs, runId: RUN_ID, scope: SCOPE },
      prompt: 'I like tea. Note what matters.',
      model: scriptedModel(scenario),
      versionedMemory: { session, tools: true, extract: scenario.extract },
      tools: {
        lookup: {
          parameters: { type: 'object' }, replay: 'idempotent' as const,
          execute: (_: unknown, ctx: { toolCallId: string; modelStep: number }) => {
            const key = `${ctx.modelStep}:${ctx.toolCallId}`;
            effects.set(key, (effects.get(key) ?? 0) + 1);
            return 'found';
          },
        },
      },
      maxSteps: 10,
    };
    return { runs, session, runOptions };
  };
  const pairs = new Set<string>();
  const WRITE_TOOLS = new Set(['memory_remember', 'memory_revise', 'memory_retract']);
  const onSaved = (envelope: AgentRunEnvelopeV3) => {
    const intents = new Map((envelope.memoryIntents ?? []).map((i) => [i.operationId, i.status]));
    for (const receipt of Object.values(envelope.receipts ?? {})) {
      if (!WRITE_TOOLS.has(receipt.toolName)) continue;
      pairs.add(`${receipt.status}>${intents.get(`${RUN_ID}:memory:${receipt.modelStep}:${receipt.toolCallId}`) ?? 'none'}`);
    }
  };
  let proc = new Process(counters, fault, state, onSaved);
  let world = open(proc);
  let result: AgentResult<unknown> | undefined;
  const reconciliations: unknown[] = [];
  let legs = 0;
  let restarts = 0;
  const raced = async <T>(work: () => Promise<T>): Promise<{ dead: true } | { dead: false; value?: T; error?: unknown }> => {
    const settled = work().then((value) => ({ dead: false as const, value }), (error: unknown) => ({ dead: false as const, error }));
    return Promise.race([settled, proc.died.then(() => ({ dead: true as const }))]);
  };
  const first = await raced(() => runAgent(world.runOptions as never) as Promise<AgentResult<unknown>>);
  legs++;
  if (!first.dead && 'value' in first) result = first.value;
  state.trace.push(first.dead ? 'leg 1: process died' : `leg 1: ${result?.status ?? `threw ${String((first as { error?: unknown }).error)}`}`);
  const inner = outside.runs;
  const afterFirstLeg = await inner.load(RUN_ID, { scope: SCOPE });
  for (let round = 0; round < 8; round++) {
    if (proc.dead) {
      // A fresh process: the dead one's calls never settle; it can write nothing more.
      proc = new Process(counters, fault, state, onSaved);
      world = open(proc);
      restarts++;
    }
    const stored = await inner.load(RUN_ID, { scope: SCOPE });
    const settled = stored !== undefined && TERMINAL.has(stored.status)
      && (stored.memoryIntents ?? []).every((i) => i.status === 'acknowledged' || i.status === 'failed');
    if (settled && round > 0) break;
    let outcome;
    if (stored === undefined) {
      outcome = await raced(() => runAgent(world.runOptions as never) as Promise<AgentResult<unknown>>);
      state.trace.push('run again');
    } else if (!TERMINAL.has(stored.status)) {
      outcome = await raced(() => resumeAgent(world.runOptions as never) as Promise<AgentResult<unknown>>);
      state.trace.push(`resume from ${stored.status}`);
    } else {
      outcome = await raced(() => reconcileAgentRun({
        checkpointVersion: 3, session: { store: world.runs, runId: RUN_ID, scope: SCOPE }, versionedMemory: { session: world.session },
      } as never));
      state.trace.push('reconcile');
      if (!outcome.dead && 'value' in outcome) reconciliations.push(outcome.value);
      if (!outcome.dead && 'error' in outcome) state.trace.push(`reconcile threw ${String(outcome.error)}`);
      if (outcome.dead) state.trace.push('process died');
      continue;
    }
    legs++;
    if (!outcome.dead && 'value' in outcome) result = outcome.value as AgentResult<unknown>;
    state.trace.push(outcome.dead ? 'process died' : `-> ${result?.status ?? `threw ${String((outcome as { error?: unknown }).error)}`}`);
  }
  const memory = outside.memory;
  const records = await memory.list({ scope: MEMORY_SCOPE, includeRetracted: true, includeForgotten: true, limit: 1000 });
  const revisions: VersionedMemoryRecord[] = [];
  for (const r of records) revisions.push(...(await memory.history({ scope: MEMORY_SCOPE, id: r.id })));
  const receipts: Report['receipts'] = new Map();
  for (const op of new Set(revisions.map((r) => r.operationId))) {
    const receipt = await memory.receipt({ scope: MEMORY_SCOPE, operationId: op });
    if (receipt) receipts.set(op, { planned: receipt.planned, records: receipt.records, scopeRevision: receipt.scopeRevision });
  }
  const record = await inner.load(RUN_ID, { scope: SCOPE });
  for (const intent of record?.memoryIntents ?? []) {
    if (receipts.has(intent.operationId)) continue;
    const receipt = await memory.receipt({ scope: MEMORY_SCOPE, operationId: intent.operationId });
    if (receipt) receipts.set(intent.operationId, { planned: receipt.planned, records: receipt.records, scopeRevision: receipt.scopeRevision });
  }
  return {
    result, record, saves: counters.saves, commits: counters.commits, revisions, scopeRevision: await memory.scopeRevision({ scope: MEMORY_SCOPE }),
    receipts, effects, pairs, afterFirstLeg, fired: state.fired, legs, restarts, reconciliations, trace: state.trace,
  };
}

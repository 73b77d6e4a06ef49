/**
 * The world of the memory and chat crash property: random conversations of
 * one or two runs ("legs") with memory and a chat, and one fault at any
 * write the drive makes. A write is a save of the run's record, a memory
 * mutation (add, update, delete) or a chat write (saveChat, writeChat), all
 * counted in one sequence, so "the Nth write" names every save around the
 * extraction and the chat write alike.
 *
 * A fault is a crash (the process dies just before the write reaches its
 * store, or just after it landed: every wrapped call from then on never
 * settles) or a store that throws (before the write, or after it landed).
 * The run store, the memory store and the chat store are three systems: a
 * crash ends the process, and the drive goes on in a fresh one over the same
 * data (a copy of the run store, the same memory and chat stores).
 */
import fc from 'fast-check';
import type { AgentRunStore, AgentTools, Message } from 'cairn/agent';
import { createInMemoryChatStore, type ChatStore, type ConditionalChatStore } from 'cairn/chat';
import { createInMemoryMemoryStore, type MemoryStore } from 'cairn/memory';
import { injectedFaultError, ledgerTool, type Ledger, type MockTurn } from 'cairn/testing';
import type { ModelRequest } from '../../src/models/types.js';
import type { MemoryLlmInput } from '../../src/memory/run-types.js';

export type TurnKind = 'plain' | 'gated';

export interface LegScript {
  /** The tool turns before the final text turn (one call each). */
  calls: TurnKind[];
  /** The facts the memory LLM finds in the leg: `leg <n> fact <i>`. */
  facts: number;
  /** The leg stops at max-steps before its final turn (so it never extracts). */
  stops: boolean;
  /**
   * At its first suspension (a gated call) a cancel is queued for the leg (cancelAgentRun), and the next resume ends
   * it stopped, reason `aborted`, through the chart's end: its terminal commit, then its chat write. It never extracts.
   */
  cancels: boolean;
}

export interface MemChatScenario {
  legs: LegScript[];
  /** A record `old: ...` is stored before the first leg, and the first extraction deletes it (deletions come first). */
  forget: boolean;
  /** The chat store is a ConditionalChatStore (writeChat at a revision), or a plain ChatStore (saveChat). */
  conditional: boolean;
}

const legArb: fc.Arbitrary<LegScript> = fc.record({
  calls: fc.array(fc.constantFrom<TurnKind>('plain', 'gated'), { maxLength: 2 }),
  facts: fc.integer({ min: 0, max: 2 }),
  stops: fc.boolean(),
  cancels: fc.boolean(),
}).map((leg) => {
  const cancels = leg.cancels && leg.calls.includes('gated');
  return { ...leg, cancels, stops: !cancels && leg.stops && leg.calls.length > 0 };
});

/** The leg ends without completing (max-steps, or a queued cancel): it extracts nothing. */
export const endsEarly = (leg: LegScript) => leg.stops || leg.cancels;

export const memChatScenarioArb: fc.Arbitrary<MemChatScenario> = fc.record({
  legs: fc.array(legArb, { minLength: 1, maxLength: 2 }),
  forget: fc.boolean(),
  conditional: fc.boolean(),
});

export function describeMemChat(s: MemChatScenario): string {
  const legs = s.legs.map((l) => `[${[...l.calls, l.cancels ? 'cancel' : l.stops ? 'stop' : 'text'].join(' ')}; ${l.facts} facts]`).join(' → ');
  return `${legs}${s.forget ? ' forget' : ''} ${s.conditional ? 'conditional' : 'plain'} chat`;
}

/** Where a write is: what a tally groups faults by. */
export type WriteKind = 'run-save' | 'memory-write' | 'chat-write';

export type WriteFault =
  | { kind: 'none' }
  | { kind: 'crash'; at: number; when: 'before' | 'after' }
  | { kind: 'throw'; at: number; when: 'before' | 'after' };

/** Every fault a drive that made `writes` writes can meet: each write, crashed or thrown, before or after it lands. */
export function everyFault(writes: number): WriteFault[] {
  const out: WriteFault[] = [];
  for (let at = 1; at <= writes; at++) {
    for (const when of ['before', 'after'] as const) out.push({ kind: 'crash', at, when }, { kind: 'throw', at, when });
  }
  return out;
}

const never = <T>() => new Promise<T>(() => undefined);

/**
 * One simulated process: the writes it makes, counted over the whole drive
 * (`counter` is shared), and the fault, which only the first process carries.
 */
export class Process {
  fired = false;
  private announce!: () => void;
  readonly crashed = new Promise<void>((resolve) => (this.announce = resolve));

  constructor(private readonly counter: { n: number; kinds: WriteKind[]; states: string[] }, private readonly fault: WriteFault) {}

  /** What a read or an answer turns into once the process is gone: a promise that never settles. */
  async pass<T>(work: () => Promise<T>): Promise<T> {
    if (this.fired) return never();
    const value = await work();
    return this.fired ? never() : value;
  }

  /** `state`: for a save of the run's record, where the run was (its top-level state, or `cancel` for a queued cancel). */
  async write<T>(kind: WriteKind, work: () => Promise<T>, state = ''): Promise<T> {
    if (this.fired) return never();
    const index = ++this.counter.n;
    this.counter.kinds.push(kind);
    this.counter.states.push(state);
    const f = this.fault;
    const hit = f.kind !== 'none' && f.at === index;
    if (hit && f.kind === 'crash' && f.when === 'before') return this.crash();
    if (hit && f.kind === 'throw' && f.when === 'before') throw injectedFaultError(`injected ${kind} failure`);
    let value: T;
    try {
      value = await work();
    } catch (error) {
      if (this.fired) return never();
      throw error;
    }
    if (hit && f.kind === 'crash') return this.crash();
    if (hit) throw injectedFaultError(`injected ${kind} failure (after it landed)`);
    return this.fired ? never() : value;
  }

  private crash<T>(): Promise<T> {
    this.fired = true;
    this.announce();
    return never();
  }

  race<R>(work: Promise<R>): Promise<{ crashed: true } | { crashed: false; result: R }> {
    return Promise.race([
      work.then((result) => ({ crashed: false as const, result })),
      this.crashed.then(() => ({ crashed: true as const })),
    ]);
  }
}

const stateOf = (snapshot: unknown) => {
  const value = (snapshot as { value?: unknown } | null)?.value;
  return typeof value === 'string' ? value : value && typeof value === 'object' ? Object.keys(value)[0] ?? '' : '';
};

export function wrapRunStore(store: AgentRunStore, p: Process): AgentRunStore {
  return {
    load: (id, options) => p.pass(() => store.load(id, options)),
    save: (envelope, options) => p.write('run-save', () => store.save(envelope, options), envelope.cancel !== undefined ? 'cancel' : stateOf(envelope.snapshot)),
  };
}

/** Each landed add or update, by operation id and text: a mutation applied twice shows as a count of 2. */
export type Landed = Map<string, number>;

export function wrapMemoryStore(store: MemoryStore, p: Process, landed: Landed): MemoryStore {
  const note = (input: { text: string; metadata?: { cairn?: { operationId?: string } } }) => {
    const key = `${input.metadata?.cairn?.operationId ?? '-'}|${input.text}`;
    landed.set(key, (landed.get(key) ?? 0) + 1);
  };
  return {
    add: (input) => p.write('memory-write', async () => {
      const out = await store.add(input);
      note(input);
      return out;
    }),
    update: (input) => p.write('memory-write', async () => {
      const out = await store.update(input);
      if (out) note(input);
      return out;
    }),
    delete: (input) => p.write('memory-write', () => store.delete(input)),
    get: (input) => p.pass(() => store.get(input)),
    list: (input) => p.pass(() => store.list(input)),
    search: (input) => p.pass(() => store.search(input)),
    sweep: (input) => p.pass(() => store.sweep(input)),
  };
}

export function wrapChatStore(store: ConditionalChatStore, conditional: boolean, p: Process): ChatStore {
  const plain: ChatStore = {
    loadChat: (id) => p.pass(() => store.loadChat(id)),
    saveChat: (id, record) => p.write('chat-write', () => store.saveChat(id, record)),
  };
  if (!conditional) return plain;
  const wrapped: ConditionalChatStore = {
    ...plain,
    readChat: (id) => p.pass(() => store.readChat(id)),
    writeChat: (id, write, options) => p.write('chat-write', () => store.writeChat(id, write, options)),
    deleteChat: (id) => p.write('chat-write', () => store.deleteChat(id)),
  };
  return wrapped;
}

/** The external systems: they outlive every process. */
export function createSystems(scenario: MemChatScenario) {
  const memory = createInMemoryMemoryStore();
  const chats = createInMemoryChatStore();
  return { memory, chats, seeded: scenario.forget };
}

/**
 * The model of leg `leg`: its answer is a function of the conversation (the
 * assistant turns the leg has made so far), so a run resumed anywhere meets
 * the same script.
 */
export function scriptedTurn(scenario: MemChatScenario, leg: number, request: ModelRequest, inputCount: number): MockTurn {
  const messages = request.messages as Message[];
  const made = messages.slice(inputCount).filter((m) => m.role === 'assistant').length;
  const script = scenario.legs[leg]!;
  const kind = script.calls[made];
  if (kind) return { toolCalls: [{ toolName: kind, toolCallId: `l${leg}c${made}`, args: { made } }] };
  return { text: `Answer of leg ${leg}.` };
}

export function legTools(ledger: Ledger, p: Process): AgentTools {
  const tools: AgentTools = {
    plain: ledgerTool(ledger, 'plain', { result: (_a, ctx) => `plain done for ${ctx.toolCallId}` }),
    gated: ledgerTool(ledger, 'gated', { needsApproval: true, result: (_a, ctx) => `gated done for ${ctx.toolCallId}` }),
  };
  // An effect never starts in a process that is gone.
  for (const tool of Object.values(tools)) {
    const execute = tool.execute!;
    tool.execute = (args, ctx) => (p.fired ? never() : execute(args, ctx));
  }
  return tools;
}

/**
 * The memory LLM: the facts of the leg it reads (named in the conversation
 * by `leg <n>`), then an ADD for each fact, and a DELETE for each `old:`
 * memory it was shown when the scenario forgets.
 */
export function memoryLlm(scenario: MemChatScenario) {
  return (input: MemoryLlmInput): string => {
    if (input.system.includes('extract')) {
      const leg = Number(/Answer of leg (\d+)/.exec(input.user)?.[1] ?? -1);
      const n = scenario.legs[leg]?.facts ?? 0;
      return JSON.stringify({ facts: Array.from({ length: n }, (_, i) => `leg ${leg} fact ${i}`) });
    }
    const { memories, facts } = JSON.parse(input.user) as { memories: Array<{ id: string; text: string }>; facts: string[] };
    const events: unknown[] = [];
    if (scenario.forget) for (const m of memories) if (m.text.startsWith('old:')) events.push({ event: 'DELETE', id: m.id });
    // Every fact is an ADD, even one it was shown: an extraction run twice would write it twice (the store's dedup
    // would fold the text, but the write lands again), so only the engine keeps a pass from running again.
    for (const fact of facts) events.push({ event: 'ADD', text: fact });
    return JSON.stringify({ memory: events });
  };
}

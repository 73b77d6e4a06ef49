/**
 * Faults for swarm stores: a wrapper that counts every write (the swarm's
 * saves, its task runs' saves, blackboard writes) and, at a chosen one,
 * either simulates a crash (the process freezes: that call and every later
 * one never settle, so the abandoned leg can do nothing more) or throws once
 * (an injected store failure the leg sees).
 */
import type { AgentRunStore } from 'cairn/agent';
import type { SwarmStore } from 'cairn/swarm';

export type WriteKind = 'swarm' | 'run' | 'blackboard';

export interface SwarmFault {
  /** The 1-based write (of the kinds counted) where the fault lands. */
  index: number;
  /** `before`: the write never reaches the store. `after`: it lands, then the process dies. `throw`: it fails with an error. */
  mode: 'before' | 'after' | 'throw';
  /** Which writes count. @default every kind */
  kinds?: WriteKind[];
}

const never = <T>() => new Promise<T>(() => undefined);

export interface FaultyStore {
  store: SwarmStore;
  readonly fired: boolean;
  readonly crashed: Promise<void>;
  readonly writes: number;
  /** Freezes the wrappers' tools and models too: call from a tool to stop if the process is gone. */
  frozen(): boolean;
}

export function faultyStore(inner: SwarmStore, fault?: SwarmFault): FaultyStore {
  let writes = 0;
  let fired = false;
  let dead = false;
  let announce!: () => void;
  const crashed = new Promise<void>((r) => (announce = r));
  const kinds = new Set<WriteKind>(fault?.kinds ?? ['swarm', 'run', 'blackboard']);

  async function write<R>(kind: WriteKind, work: () => Promise<R>): Promise<R> {
    if (dead) return never();
    if (!kinds.has(kind)) return deliver(work());
    const index = ++writes;
    if (fault && !fired && index === fault.index) {
      fired = true;
      if (fault.mode === 'throw') throw new Error(`injected fault at write ${index} (${kind})`);
      dead = true;
      announce();
      if (fault.mode === 'after') await work().catch(() => undefined);
      return never();
    }
    return deliver(work());
  }
  async function deliver<R>(work: Promise<R>): Promise<R> {
    try {
      const value = await work;
      if (dead) return never();
      return value;
    } catch (error) {
      if (dead) return never();
      throw error;
    }
  }
  const read = <R>(work: () => Promise<R>): Promise<R> => (dead ? never() : deliver(work()));

  const runs: AgentRunStore = {
    load: (runId, options) => read(() => inner.runs.load(runId, options)),
    save: (envelope, options) => write('run', () => inner.runs.save(envelope, options)),
  };
  const store: SwarmStore = {
    runs,
    loadSwarm: (id, o) => read(() => inner.loadSwarm(id, o)),
    saveSwarm: (r, e) => write('swarm', () => inner.saveSwarm(r, e)),
    readJournal: (id, o) => read(() => inner.readJournal(id, o)),
    writeBlackboard: (id, w) => write('blackboard', () => inner.writeBlackboard(id, w)),
    readBlackboard: (id, k) => read(() => inner.readBlackboard(id, k)),
  };
  return {
    store,
    get fired() { return fired; },
    crashed,
    get writes() { return writes; },
    frozen: () => dead,
  };
}

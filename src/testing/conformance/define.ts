/**
 * One initializer for a whole backend: the store, lease, breaker and journal suites
 * from a single description of how to make fresh data and open the backend
 * over it, so a backend's test file is a few lines.
 */
import type { BreakerStore } from '../../models/breaker-store.js';
import type { AgentRunStore, LeaseProvider } from '../../stores/types.js';
import type { AgentStreamJournal } from '../../ui/journal.js';
import { validateBreakerStore } from './breaker-suite.js';
import { defineJournalConformance } from './journal-suite.js';
import { validateLeaseProvider } from './lease-suite.js';
import { validateAgentRunStore } from './store-suite.js';
import type { ConformanceTestApi } from './types.js';

/** What a backend opens over one data set: its stores, and how to close them. */
export interface BackendHandle {
  agentRuns: AgentRunStore;
  /** The provider `agentRuns` checks a save's lease against. Required with `features.leases`. */
  leases?: LeaseProvider;
  /** Required with `features.breakers`. */
  breakers?: BreakerStore;
  /** The UI replay journal. Required with `features.journal`. */
  journal?: AgentStreamJournal;
  /** Closes what this open made. */
  close?(): void | Promise<void>;
}

/** One case's data: fresh and empty (a new file, a new schema, a new map). */
export interface BackendSpace {
  /**
   * Opens the backend over the data. Each call after the first is another
   * process opening the same data (unless `reopens` is false).
   */
  open(): BackendHandle | Promise<BackendHandle>;
  /**
   * Moves the clock the leases (and the store's lease check) read by `ms`,
   * and the one the journal stamps `updatedAt` with. Required with
   * `features.leases` or `features.journal`.
   */
  advance?(ms: number): Promise<void>;
  /** The lease lifetime the lease cases use. @default 10000 */
  ttlMs?: number;
  /** Removes the data, after every handle was closed. */
  destroy?(): void | Promise<void>;
}

export interface StoreConformanceOptions {
  /** Names the describe blocks: `AgentRunStore conformance: <name>`, and so on. */
  name: string;
  /** Makes one case's data. Called once per case of every suite. */
  create(): Promise<BackendSpace>;
  /**
   * Whether a second `open()` is another object over the same data (true for
   * a file or a database). False for a backend whose data lives in the
   * object (in memory): the cases that need a second object are then left to
   * the one object.
   * @default true
   */
  reopens?: boolean;
  /**
   * The parts of the contract the backend has. `leases`: the store checks a
   * save's lease and `leases` is a LeaseProvider (the lease suite runs too);
   * `breakers`: the breaker suite runs; `journal`: `journal` is an
   * AgentStreamJournal and the journal suite runs.
   * @default { list: true, prune: true, leases: false, breakers: false, journal: false }
   */
  features?: { list?: boolean; prune?: boolean; leases?: boolean; breakers?: boolean; journal?: boolean };
}

/** What one case opened: its data, every handle opened on it, the first of them, and how to open another. */
interface Opened {
  space: BackendSpace;
  handles: BackendHandle[];
  first: BackendHandle;
  open(): Promise<BackendHandle>;
}

/**
 * Registers the AgentRunStore suite, and the LeaseProvider, BreakerStore and
 * AgentStreamJournal suites when the backend has those parts, with your test
 * framework.
 *
 * @example
 * ```ts
 * import { describe, it } from 'vitest';
 * import { defineStoreConformance } from 'cairn/testing';
 *
 * defineStoreConformance({
 *   name: 'my backend',
 *   features: { leases: true },
 *   async create() {
 *     const data = await makeEmptyDatabase();
 *     return { open: () => openMyBackend(data), advance: (ms) => data.clock.advance(ms), destroy: () => data.drop() };
 *   },
 * }, { describe, it });
 * ```
 */
export function defineStoreConformance(options: StoreConformanceOptions, api: ConformanceTestApi): void {
  const features = { list: true, prune: true, leases: false, breakers: false, journal: false, ...options.features };
  const reopens = options.reopens ?? true;
  /** Every case's space and what it opened, so destroy closes them all. */
  const cases = new WeakMap<object, { space: BackendSpace; handles: BackendHandle[] }>();

  /** An initializer's create and destroy: each case opens fresh data once, and destroy closes what it opened. */
  function initializer<F extends object>(fixtureOf: (opened: Opened) => F) {
    return {
      name: options.name,
      async create() {
        const space = await options.create();
        const handles: BackendHandle[] = [];
        const open = async () => {
          const handle = await space.open();
          handles.push(handle);
          return handle;
        };
        const fixture = fixtureOf({ space, handles, first: await open(), open });
        cases.set(fixture, { space, handles });
        return fixture;
      },
      destroy,
    };
  }

  async function destroy(fixture: object) {
    const state = cases.get(fixture);
    if (!state) return;
    for (const handle of state.handles.splice(0)) await handle.close?.();
    await state.space.destroy?.();
  }

  /**
   * A fixture's `reopen` (another handle's part) and `restart` (every handle
   * closed, then a new one's part); neither when the backend does not reopen.
   */
  function reopenAndRestart<S>(opened: Opened, partOf: (handle: BackendHandle) => S): { reopen?(): Promise<S>; restart?(): Promise<S> } {
    if (!reopens) return {};
    return {
      reopen: async () => partOf(await opened.open()),
      async restart() {
        for (const handle of opened.handles.splice(0)) await handle.close?.();
        return partOf(await opened.open());
      },
    };
  }

  const need = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new TypeError(`defineStoreConformance(${options.name}): ${what}`);
    return value;
  };

  validateAgentRunStore({
    ...initializer(({ space, first, open }) => ({
      store: first.agentRuns,
      leases: first.leases,
      advance: space.advance,
      ttlMs: space.ttlMs,
      ...(reopens ? { reopen: async () => (await open()).agentRuns } : {}),
    })),
    features: { list: features.list, prune: features.prune, leases: features.leases },
  }, api);

  if (features.leases) {
    validateLeaseProvider(initializer(({ space, first, open }) => ({
      provider: need(first.leases, 'features.leases is set, so open() must return leases.'),
      advance: need(space.advance, 'features.leases is set, so create() must return advance.'),
      ttlMs: space.ttlMs,
      ...(reopens ? { reopen: async () => need((await open()).leases, 'open() returned no leases.') } : {}),
    })), api);
  }

  if (features.breakers) {
    const breakersOf = (handle: BackendHandle) => need(handle.breakers, 'features.breakers is set, so open() must return breakers.');
    validateBreakerStore(initializer((opened) => ({ store: breakersOf(opened.first), ...reopenAndRestart(opened, breakersOf) })), api);
  }

  if (features.journal) {
    const journalOf = (handle: BackendHandle) => need(handle.journal, 'features.journal is set, so open() must return journal.');
    defineJournalConformance(initializer((opened) => ({
      journal: journalOf(opened.first),
      advance: need(opened.space.advance, 'features.journal is set, so create() must return advance.'),
      ...reopenAndRestart(opened, journalOf),
    })), api);
  }
}

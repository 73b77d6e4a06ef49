/**
 * The shapes a backend hands the conformance suites: how to register cases
 * with the caller's test framework, and how to make a fresh store or lease
 * provider for each case.
 */
import type { AgentRunStore, LeaseProvider } from '../../agent/types.js';

/**
 * The caller's test functions. vitest, jest and node:test all have a
 * `describe` and an `it` of this shape, so cairn/testing imports no framework.
 * A case may take a few seconds on a database (one saves 1,001 runs): to give
 * cases a longer timeout, pass a wrapper, e.g. `it: (name, fn) => it(name, fn, 30_000)`.
 */
export interface ConformanceTestApi {
  describe(name: string, fn: () => void): unknown;
  it(name: string, fn: () => Promise<void>): unknown;
}

/** What `create()` hands one store case. */
export interface AgentRunStoreFixture {
  /** A store holding no runs. Every case gets its own (reset a shared database in `create`). */
  store: AgentRunStore;
  /**
   * Another store object over the same data, as a second process (or a restart)
   * opens it. When given, the durability cases read through it too and the
   * concurrency cases race several of them; close them in `destroy`.
   */
  reopen?(): Promise<AgentRunStore>;
  /** The provider the store checks a save's lease against. Required when `features.leases` is true. */
  leases?: LeaseProvider;
  /**
   * Moves the clock that the store and `leases` read a lease's expiry on, by
   * `ms`. A store on a database clock passes one that sleeps (then keep
   * `ttlMs` small) or that shifts the clock its queries read. Required when
   * `features.leases` is true.
   */
  advance?(ms: number): Promise<void>;
  /** The lease lifetime the lease cases use. @default 10000 */
  ttlMs?: number;
}

export interface AgentRunStoreInitializer {
  /** Names the describe block: `AgentRunStore conformance: <name>`. */
  name: string;
  /** Makes the store for one case. Called once per case. */
  create(): Promise<AgentRunStoreFixture>;
  /** Closes what `create` opened (and what `reopen` did). Called after each case, passed or failed. */
  destroy?(fixture: AgentRunStoreFixture): Promise<void>;
  /**
   * Which optional parts of the contract the store implements; the cases of a
   * part left out are not registered.
   * @default { list: true, prune: true, leases: false }
   */
  features?: { list?: boolean; prune?: boolean; leases?: boolean };
}

/** What `create()` hands one lease case. */
export interface LeaseProviderFixture {
  /** A provider holding no leases. */
  provider: LeaseProvider;
  /**
   * Moves the provider's clock forward by `ms`. Required: expiry is most of
   * the contract. A provider on a database clock passes one that sleeps (then
   * keep `ttlMs` small) or that shifts the clock its queries read.
   */
  advance(ms: number): Promise<void>;
  /**
   * Another provider object over the same leases, as another process opens
   * it. When given, the race cases acquire through several of them.
   */
  reopen?(): Promise<LeaseProvider>;
  /** The lease lifetime the cases use; time moves in halves and wholes of it. @default 10000 */
  ttlMs?: number;
}

export interface LeaseProviderInitializer {
  /** Names the describe block: `LeaseProvider conformance: <name>`. */
  name: string;
  create(): Promise<LeaseProviderFixture>;
  destroy?(fixture: LeaseProviderFixture): Promise<void>;
}

/** Registers one case: a fresh fixture from `create`, destroyed afterwards whatever happened. */
export type StoreCaseRegistrar = (name: string, body: (fixture: AgentRunStoreFixture) => Promise<void>) => void;

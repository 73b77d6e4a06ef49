/**
 * What every command shares: where its output goes, the store's path, and
 * rebuilding a run's model, tools and skills from what was recorded for it.
 */
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, resolve } from 'node:path';
import { customAlphabet } from 'nanoid';
import type { AgentTools } from '../agent/types.js';
import type { LanguageModel } from '../models/types.js';
import { agentRunLeaseKey } from '../agent/index.js';
import { createSqliteOpsStore, type SqliteOpsStore } from '../ops/sqlite/index.js';
import { NotACairnStoreError } from '../stores/sqlite/index.js';
import { UsageError, wholeNumber } from './args.js';
import { demoTools } from './demo.js';
import { buildModel, requireKeys } from './model-spec.js';
import type { RunMeta } from './run-meta.js';
import type { CommandContext, } from './summary.js';
import type { ProgressStream } from './progress.js';
import { loadToolsModule } from './tools-module.js';

export interface Io {
  stdout: { write(text: string): unknown };
  stderr: ProgressStream;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  cwd: string;
}

export const DEFAULT_STORE = '.cairn/runs.sqlite';

/** How long a leg's lease outlives a process that stopped renewing it (a crash). */
export const DEFAULT_LEASE_TTL_MS = 10_000;

/** `--lease-ttl <ms>`: at least 30 ms (the engine's floor). */
export function leaseTtl(value: string | undefined): number {
  return wholeNumber('lease-ttl', value, 30, 86_400_000, 'milliseconds') ?? DEFAULT_LEASE_TTL_MS;
}

/** The lease a CLI leg holds on its run, so a second cairn process on the same run is refused (busy, exit 7). */
export function cliLease(ops: SqliteOpsStore, ttlMs: number) {
  return { provider: ops.leases, owner: `cairn-cli:${hostname()}:${process.pid}`, ttlMs };
}

/** Ids a shell passes back as they are: letters and digits only, never a leading dash. */
export const safeId = customAlphabet('0123456789abcdefghijklmnopqrstuvwxyz', 16);

export interface StoreLocation {
  /** Absolute path of the SQLite file. */
  path: string;
  /** What printed commands repeat: `--store <given>` unless it is the default. */
  ctx: CommandContext;
}

export function storeLocation(given: string | undefined, cwd: string): StoreLocation {
  if (given === '') throw new UsageError('--store must be a file path.');
  const path = resolve(cwd, given ?? DEFAULT_STORE);
  const isDefault = path === resolve(cwd, DEFAULT_STORE);
  return { path, ctx: { storeArgs: isDefault || given === undefined ? [] : ['--store', given] } };
}

/** The store path as the user gave it (or the default), for messages. */
const shown = (given: string | undefined) => given ?? DEFAULT_STORE;

/** Opens a store the way `open` says; a file that is not a Cairn store is a usage error naming it. */
function openAs(location: StoreLocation, given: string | undefined, how: { create?: boolean; readonly?: boolean }): SqliteOpsStore {
  try {
    return createSqliteOpsStore({ path: location.path, ...how });
  } catch (error) {
    if (error instanceof NotACairnStoreError) {
      throw new UsageError(`${shown(given)} is not a Cairn store: ${error.why}. It was left as it was; pass --store <path> of a store cairn run created.`);
    }
    throw error;
  }
}

/**
 * Opens the store of a command that starts runs, creating its directory and
 * file. An existing file must be a Cairn store already (or empty): a run never
 * writes its tables into another program's database.
 */
export function openStoreForWrite(location: StoreLocation, given: string | undefined): SqliteOpsStore {
  let size = -1;
  try {
    size = statSync(location.path).size;
  } catch {
    // no file yet: created below
  }
  if (size < 0) mkdirSync(dirname(location.path), { recursive: true });
  return openAs(location, given, { create: size <= 0 });
}

function requireFile(location: StoreLocation, given: string | undefined): void {
  if (!existsSync(location.path)) {
    throw new UsageError(`There is no run store at ${shown(given)}; start a run with cairn run or cairn demo, or pass --store <path>.`);
  }
}

/** Opens a store that must already exist and be a Cairn store (resume): it is never created. */
export function openExistingStore(location: StoreLocation, given: string | undefined): SqliteOpsStore {
  requireFile(location, given);
  return openAs(location, given, { create: false });
}

/**
 * Opens a store for reading only (inspect, runs, backup): nothing is written
 * to the file or created beside it, so it works on a file the user cannot write.
 */
export function openStoreReadOnly(location: StoreLocation, given: string | undefined): SqliteOpsStore {
  requireFile(location, given);
  return openAs(location, given, { readonly: true });
}

/** Absolute skill directories; a mistyped one is a usage error, not a silently empty list. */
export function skillDirs(dirs: string[], cwd: string): string[] {
  return dirs.map((dir) => {
    const abs = resolve(cwd, dir);
    let ok = false;
    try {
      ok = statSync(abs).isDirectory();
    } catch {
      // reported below
    }
    if (!ok) throw new UsageError(`--skills ${dir}: not a directory (a folder of <id>/SKILL.md skills).`);
    return abs;
  });
}

export interface Materialized {
  model: LanguageModel;
  fallbackModels: LanguageModel[];
  tools: AgentTools | undefined;
  skills: string[];
}

/**
 * The model, fallbacks, tools and skills a run was started with, rebuilt from
 * its record. A provider model whose key is not in the environment is a usage
 * error here, before the leg writes anything (`keys: false` skips that check,
 * for a leg that makes no model call).
 */
export async function materialize(
  meta: Pick<RunMeta, 'model' | 'fallbacks' | 'tools' | 'skills' | 'runId'>,
  cwd: string,
  options: { keys?: boolean } = {},
): Promise<Materialized> {
  const model = buildModel(meta.model, cwd);
  const fallbackModels = (meta.fallbacks ?? []).map((source) => buildModel(source, cwd));
  if (options.keys !== false) requireKeys([
    { flag: 'model', source: meta.model, model },
    ...(meta.fallbacks ?? []).map((source, i) => ({ flag: 'fallback', source, model: fallbackModels[i]! })),
  ]);
  let tools: AgentTools | undefined;
  if (meta.tools?.kind === 'demo') tools = demoTools(meta.tools.log, meta.runId);
  else if (meta.tools?.kind === 'module') tools = (await loadToolsModule(meta.tools.path, cwd)).tools;
  return { model, fallbackModels, tools, skills: meta.skills };
}

export interface Interrupt {
  /** Aborted by the second Ctrl-C. */
  signal: AbortSignal;
  /** The leg holds the run's lease now: a drain asked for before can be sent. */
  started(): void;
  dispose(): void;
}

/**
 * Ctrl-C during a leg. The first asks the run to stop at its next model-step
 * boundary through its lease (`requestDrain`: the leg's next renewal sees it),
 * so it is stored `drained` and stays resumable (exit 3); the second aborts
 * the leg (exit 5); after that, Ctrl-C ends the process as usual.
 */
export function interruptHandler(drain: () => Promise<void>, say: (text: string) => void): Interrupt {
  const controller = new AbortController();
  let presses = 0;
  let running = false;
  let wanted = false;
  const send = () => {
    drain().catch((error: unknown) => say(`could not ask the run to stop (${error instanceof Error ? error.message : String(error)}); press Ctrl-C again to abort it.`));
  };
  const onSigint = () => {
    presses++;
    if (presses === 1) {
      say('stopping at the next step boundary; the run stays resumable. Press Ctrl-C again to abort it.');
      wanted = true;
      if (running) send();
      return;
    }
    say('aborting.');
    process.removeListener('SIGINT', onSigint);
    controller.abort(new Error('Interrupted (SIGINT).'));
  };
  process.on('SIGINT', onSigint);
  return {
    signal: controller.signal,
    started() {
      if (running) return;
      running = true;
      if (wanted) send();
    },
    dispose: () => process.removeListener('SIGINT', onSigint),
  };
}

/** The lease key of a run and a drain request on it: what the first Ctrl-C sends. */
export function drainRun(ops: SqliteOpsStore, scope: string, runId: string): () => Promise<void> {
  return () => ops.leases.requestDrain(agentRunLeaseKey({ scope, runId }));
}

export function printJson(io: Io, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

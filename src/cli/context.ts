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
import { createSqliteOpsStore, type SqliteOpsStore } from '../ops/sqlite/index.js';
import { UsageError } from './args.js';
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
  if (value === undefined) return DEFAULT_LEASE_TTL_MS;
  if (!/^\d+$/.test(value) || Number(value) < 30 || Number(value) > 86_400_000) {
    throw new UsageError(`--lease-ttl takes milliseconds from 30 to 86400000, got ${JSON.stringify(value)}.`);
  }
  return Number(value);
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

/** Opens the store, creating its directory and file (commands that start runs). */
export function openStoreForWrite(location: StoreLocation): SqliteOpsStore {
  mkdirSync(dirname(location.path), { recursive: true });
  return createSqliteOpsStore({ path: location.path });
}

/** Opens a store that must already exist: reading commands never create one. */
export function openExistingStore(location: StoreLocation, given: string | undefined): SqliteOpsStore {
  if (!existsSync(location.path)) {
    throw new UsageError(`There is no run store at ${given ?? DEFAULT_STORE}; start a run with cairn run or cairn demo, or pass --store <path>.`);
  }
  return createSqliteOpsStore({ path: location.path });
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

/** Aborts the leg on Ctrl-C (it then reports `cancelled`); a second Ctrl-C ends the process. */
export function interruptSignal(): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const onSigint = () => controller.abort(new Error('Interrupted (SIGINT).'));
  process.once('SIGINT', onSigint);
  return { signal: controller.signal, dispose: () => process.removeListener('SIGINT', onSigint) };
}

export function printJson(io: Io, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

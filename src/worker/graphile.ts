/**
 * graphile-worker, loaded when a queue or a worker is first used: it is an
 * optional peer, so `cairn/worker` loads without it and a project that runs
 * no workers never installs it. The shapes below are the few parts Cairn
 * calls, declared here so that no published declaration imports its types.
 */
import { InvalidOptionsError } from '../errors/index.js';

/** The graphile-worker version Cairn is built and tested against. */
export const GRAPHILE_WORKER_VERSION = '0.16.6';

/** The newest graphile-worker migration that version knows (its sql/000018.sql). */
export const GRAPHILE_MIGRATIONS_KNOWN = 18;

/** The one task every Cairn job runs under. */
export const TASK_IDENTIFIER = 'cairn_run';

export interface GraphileJob {
  id: string;
  attempts: number;
  max_attempts: number;
  locked_by: string | null;
  payload: unknown;
}

export interface GraphileHelpers {
  job: GraphileJob;
}

export type GraphileTask = (payload: unknown, helpers: GraphileHelpers) => Promise<void>;

export interface GraphileRunner {
  stop(): Promise<void>;
  promise: Promise<void>;
}

export type GraphileLogFunction = (level: string, message: string, meta?: unknown) => void;

export interface GraphileRunOptions {
  pgPool: unknown;
  schema: string;
  concurrency: number;
  pollInterval: number;
  noHandleSignals: true;
  taskList: Record<string, GraphileTask>;
  logger: unknown;
  events?: unknown;
  /** Always empty: a `crontab` file in the working directory must not schedule jobs here. */
  parsedCronItems: [];
}

interface GraphileModule {
  run(options: GraphileRunOptions): Promise<GraphileRunner>;
  runMigrations(options: { pgPool: unknown; schema: string; logger: unknown }): Promise<void>;
  Logger: new (factory: (scope: unknown) => GraphileLogFunction) => unknown;
}

let loaded: Promise<GraphileModule> | undefined;

/** graphile-worker's module, or an error that says how to install it. */
export function loadGraphile(): Promise<GraphileModule> {
  loaded ??= import('graphile-worker' as string).then(
    (mod: Record<string, unknown>) => {
      // A CommonJS module: its names are on the namespace, and on `default` too.
      const pick = (name: string) => mod[name] ?? (mod.default as Record<string, unknown> | undefined)?.[name];
      return { run: pick('run'), runMigrations: pick('runMigrations'), Logger: pick('Logger') } as GraphileModule;
    },
    (error: unknown) => {
      loaded = undefined;
      throw new InvalidOptionsError(
        `cairn/worker needs graphile-worker, which is not installed: npm install graphile-worker@${GRAPHILE_WORKER_VERSION} (${error instanceof Error ? error.message : String(error)})`,
      );
    },
  );
  return loaded;
}

/** What graphile-worker logs, as `log(level, message)`; debug lines are dropped. */
export function graphileLogger(graphile: GraphileModule, log: (level: 'info' | 'warning' | 'error', message: string) => void): unknown {
  return new graphile.Logger(() => (level, message) => {
    if (level === 'error' || level === 'warning' || level === 'info') log(level, message);
  });
}

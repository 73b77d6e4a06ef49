/**
 * What `cairn run` and `cairn demo` used for each run, so `cairn resume <runId>`
 * can rebuild the same model, fallbacks, tools and skills without repeated
 * flags (the run's binding refuses a change). A provider model is recorded by
 * its spec and endpoint, never with a key: keys stay in the environment.
 *
 * It lives in the run store's own SQLite file, in a table of the CLI's
 * (`cairn_cli_runs`), written before the run's first save: a run killed
 * mid-way still has it. One row per run, inserted once; SQLite's locking makes
 * it safe for several processes.
 */
import Database from 'better-sqlite3';
import type { ModelSource } from './model-spec.js';

export type { ModelSource } from './model-spec.js';
export type ToolsSource = { kind: 'module'; path: string } | { kind: 'demo'; log: string };

export interface RunMeta {
  runId: string;
  scope: string;
  /** A scripted model file, the demo, or a provider model (its spec and endpoint; never a key). */
  model: ModelSource;
  /** The run's fallbackModels, in order; part of its binding. */
  fallbacks?: ModelSource[];
  /** `--max-retries` and `--model-timeout` of the first leg; a resume may change them. */
  maxRetries?: number;
  modelTimeoutMs?: number;
  tools: ToolsSource | null;
  /** Absolute skill directories. */
  skills: string[];
  /** Part of the run's binding: a resume passes the same. */
  maxSteps?: number;
  createdAt: number;
}

export interface RunMetaTable {
  get(runId: string): RunMeta | undefined;
  /** Records a run's metadata unless the run already has some; true when it was written. */
  put(meta: RunMeta): boolean;
  delete(runId: string): void;
  close(): void;
}

const BUSY_TIMEOUT_MS = 5_000;

/** Opens the table in the store file (which must exist: the ops store creates it). */
export function openRunMeta(storePath: string): RunMetaTable {
  const db = new Database(storePath, { timeout: BUSY_TIMEOUT_MS });
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.exec(`CREATE TABLE IF NOT EXISTS cairn_cli_runs (
  run_id     TEXT    PRIMARY KEY,
  meta       TEXT    NOT NULL,
  created_at INTEGER NOT NULL
)`);
  } catch (error) {
    db.close();
    throw error;
  }
  return {
    get(runId) {
      const row = db.prepare('SELECT meta FROM cairn_cli_runs WHERE run_id = ?').get(runId) as { meta: string } | undefined;
      return row ? (JSON.parse(row.meta) as RunMeta) : undefined;
    },
    put(meta) {
      const info = db.prepare('INSERT INTO cairn_cli_runs (run_id, meta, created_at) VALUES (?, ?, ?) ON CONFLICT (run_id) DO NOTHING')
        .run(meta.runId, JSON.stringify(meta), meta.createdAt);
      return info.changes === 1;
    },
    delete(runId) {
      db.prepare('DELETE FROM cairn_cli_runs WHERE run_id = ?').run(runId);
    },
    close() {
      if (db.open) db.close();
    },
  };
}

/**
 * Reads a run's metadata through a store's own connection (read-only for
 * inspect), without creating the table: a run not started by cairn has none.
 */
export function readRunMeta(db: Database.Database, runId: string): RunMeta | undefined {
  const table = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'cairn_cli_runs'").get();
  if (!table) return undefined;
  const row = db.prepare('SELECT meta FROM cairn_cli_runs WHERE run_id = ?').get(runId) as { meta: string } | undefined;
  return row ? (JSON.parse(row.meta) as RunMeta) : undefined;
}

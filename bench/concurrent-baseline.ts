/**
 * The baseline of the concurrency section (bench/concurrent.ts): the simplest
 * thing that does the job of a durable Cairn step, with nothing of Cairn in it.
 * The bare XState v5 loop of bench/xstate-baseline.ts (a promise
 * actor for the model turn, a checkpoint, a promise actor for the tool, a
 * checkpoint), where each checkpoint is a real commit, awaited before the
 * loop goes on:
 *
 *   snapshot  the actor's persisted snapshot (getPersistedSnapshot) as JSON,
 *             upserted into one row per run (one statement, autocommit)
 *   append    the step's rows by hand: the turn's message row at the first
 *             checkpoint, the tool result's message row and its receipt row
 *             at the second, each with the run's head row (the persisted
 *             snapshot) upserted in the same commit, as Cairn's own
 *             one-statement save does (PostgreSQL: one statement with CTEs;
 *             SQLite: one BEGIN IMMEDIATE transaction)
 *
 * The context holds the step, the last turn and the last result only, so the
 * head is the same size at step 1 and at step 100 (as Cairn's head is).
 * PostgreSQL: `runs` loops at once on one pg Pool of `runs` connections.
 * SQLite: the loops of a process on one better-sqlite3 connection
 * (synchronous=FULL), which blocks the process while it commits.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { createActor, fromPromise, type AnyActorRef } from 'xstate';
import { baselineMachine, type BaselineContext } from './xstate-baseline.js';

/** What a checkpoint commits: the persisted snapshot, and for `append` the step's new rows. */
export interface Checkpoint {
  runId: string;
  at: 'turn' | 'step';
  step: number;
  snapshot: string;
  /** The message row the checkpoint adds (the turn, or the tool result), as JSON. */
  message: string;
  /** At `step`: the tool call's receipt, as JSON. */
  receipt: string | null;
}

export type Commit = (checkpoint: Checkpoint) => Promise<void>;

/** One loop of `steps` steps, each checkpoint committed by `commit`; resolves with the commits it made. */
export function committedLoop(runId: string, steps: number, commit: Commit): Promise<number> {
  let commits = 0;
  let actor: AnyActorRef | null = null;
  const provided = baselineMachine.provide({
    actors: {
      checkpoint: fromPromise<void, { at: 'turn' | 'step' }>(async ({ input }) => {
        const snapshot = actor!.getSnapshot() as { context: BaselineContext };
        const { context } = snapshot;
        const turn = input.at === 'turn';
        const call = context.lastTurn!.toolCalls[0]!;
        await commit({
          runId,
          at: input.at,
          // The turn's checkpoint is before the step is counted, the tool's after.
          step: turn ? context.step : context.step - 1,
          snapshot: JSON.stringify(actor!.getPersistedSnapshot()),
          message: JSON.stringify(turn ? { role: 'assistant', toolCalls: context.lastTurn!.toolCalls } : { role: 'tool', toolCallId: call.toolCallId, result: context.lastResult }),
          receipt: turn ? null : JSON.stringify({ toolCallId: call.toolCallId, status: 'completed', result: context.lastResult }),
        });
        commits++;
      }),
    },
  });
  return new Promise((resolve, reject) => {
    actor = createActor(provided, { input: { steps, keepTranscript: false } });
    actor.subscribe({ complete: () => resolve(commits), error: reject });
    actor.start();
  });
}

export type BaselineMode = 'snapshot' | 'append';

/** The baseline's tables in `schema` (PostgreSQL), created by the parent before the workers start. */
export function postgresBaselineDdl(schema: string): string {
  return `
    CREATE TABLE "${schema}".heads (run_id text PRIMARY KEY, revision int NOT NULL, snapshot text NOT NULL);
    CREATE TABLE "${schema}".messages (run_id text NOT NULL, idx int NOT NULL, body text NOT NULL, PRIMARY KEY (run_id, idx));
    CREATE TABLE "${schema}".receipts (run_id text NOT NULL, call_id text NOT NULL, body text NOT NULL, PRIMARY KEY (run_id, call_id));`;
}

export const SQLITE_BASELINE_DDL = `
  CREATE TABLE IF NOT EXISTS heads (run_id TEXT PRIMARY KEY, revision INTEGER NOT NULL, snapshot TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS messages (run_id TEXT NOT NULL, idx INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, idx));
  CREATE TABLE IF NOT EXISTS receipts (run_id TEXT NOT NULL, call_id TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, call_id));`;

/** The commit of each checkpoint on PostgreSQL: one statement on a pooled connection, prepared once a connection. */
export function postgresCommit(pool: pg.Pool, schema: string, mode: BaselineMode): Commit {
  const s = `"${schema}"`;
  const head = `INSERT INTO ${s}.heads (run_id, revision, snapshot) VALUES ($1, $2, $3)
    ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, snapshot = excluded.snapshot`;
  if (mode === 'snapshot') {
    return async (c) => {
      await pool.query({ name: 'baseline-snapshot', text: head, values: [c.runId, 2 * c.step + (c.at === 'turn' ? 1 : 2), c.snapshot] });
    };
  }
  // The head, the message and (at a step's end) the receipt in one statement: one commit.
  const append = `WITH h AS (${head}),
    m AS (INSERT INTO ${s}.messages (run_id, idx, body) VALUES ($1, $2, $4)),
    r AS (INSERT INTO ${s}.receipts (run_id, call_id, body) SELECT $1, $5, $6 WHERE $6::text IS NOT NULL
      ON CONFLICT (run_id, call_id) DO UPDATE SET body = excluded.body)
    SELECT 1`;
  return async (c) => {
    const revision = 2 * c.step + (c.at === 'turn' ? 1 : 2);
    await pool.query({ name: 'baseline-append', text: append, values: [c.runId, revision, c.snapshot, c.message, `c${c.step}`, c.receipt] });
  };
}

/** The commit of each checkpoint on SQLite: one BEGIN IMMEDIATE transaction on the process's one connection. */
export function sqliteCommit(db: Database.Database, mode: BaselineMode): Commit {
  const head = db.prepare('INSERT INTO heads (run_id, revision, snapshot) VALUES (?, ?, ?) ON CONFLICT(run_id) DO UPDATE SET revision = excluded.revision, snapshot = excluded.snapshot');
  const message = db.prepare('INSERT INTO messages (run_id, idx, body) VALUES (?, ?, ?)');
  const receipt = db.prepare('INSERT INTO receipts (run_id, call_id, body) VALUES (?, ?, ?) ON CONFLICT(run_id, call_id) DO UPDATE SET body = excluded.body');
  const write = db.transaction((c: Checkpoint) => {
    const revision = 2 * c.step + (c.at === 'turn' ? 1 : 2);
    head.run(c.runId, revision, c.snapshot);
    if (mode === 'snapshot') return;
    message.run(c.runId, revision, c.message);
    if (c.receipt !== null) receipt.run(c.runId, `c${c.step}`, c.receipt);
  });
  return async (c) => {
    write.immediate(c);
  };
}

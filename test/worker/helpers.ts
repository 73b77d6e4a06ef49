/**
 * What the worker suites share: a fresh ops schema, queue schema and effects
 * schema per suite, workers started in this process with their events kept,
 * and a wait for a condition (bounded, so a hang fails instead of stalling).
 */
import pg from 'pg';
import { createPostgresOpsStore, type PostgresOpsStore } from 'cairn/ops/postgres';
import { createWorkQueue, createWorker, type CreateWorkerOptions, type Worker, type WorkerEvent, type WorkQueue } from 'cairn/worker';
import type { PostgresTestEnv } from '../stores/pg-env.js';
import { createEffectsTable, fixtureAgents, type FixtureOptions } from './fixture.js';

export interface WorkerEnv {
  url: string;
  opsSchema: string;
  queueSchema: string;
  effectsSchema: string;
  ops: PostgresOpsStore;
  queue: WorkQueue;
  pool: pg.Pool;
  close(): Promise<void>;
}

export async function openWorkerEnv(env: PostgresTestEnv): Promise<WorkerEnv> {
  const opsSchema = env.newSchema();
  const queueSchema = env.newSchema();
  const effectsSchema = env.newSchema();
  const ops = createPostgresOpsStore({ connectionString: env.url }, { schema: opsSchema });
  await ops.setup();
  const queue = createWorkQueue({ connectionString: env.url, schema: queueSchema });
  await queue.setup();
  const pool = new pg.Pool({ connectionString: env.url, max: 8 });
  pool.on('error', () => undefined);
  await createEffectsTable(pool, effectsSchema);
  return {
    url: env.url, opsSchema, queueSchema, effectsSchema, ops, queue, pool,
    async close() {
      await queue.close();
      await ops.close();
      await pool.end();
    },
  };
}

export interface StartedWorker {
  worker: Worker;
  events: WorkerEvent[];
  /** Resolves with the first event (already seen or to come) that `match` accepts. */
  next(match: (event: WorkerEvent) => boolean, what: string, timeoutMs?: number): Promise<WorkerEvent>;
}

export async function startWorker(
  w: WorkerEnv,
  options: Partial<CreateWorkerOptions> & { fixture?: Partial<FixtureOptions> } = {},
): Promise<StartedWorker> {
  const events: WorkerEvent[] = [];
  const waiters: { match: (e: WorkerEvent) => boolean; resolve: (e: WorkerEvent) => void }[] = [];
  const { fixture, ...rest } = options;
  const worker = await createWorker({
    connectionString: w.url,
    schema: w.queueSchema,
    ops: w.ops,
    agents: fixtureAgents({ effectsSchema: w.effectsSchema, opsSchema: w.opsSchema, pool: w.pool, by: 'in-process', ...fixture }),
    pollIntervalMs: 50,
    retry: { baseMs: 50, maxMs: 400 },
    log: () => undefined,
    ...rest,
    onEvent(event) {
      events.push(event);
      for (const waiter of waiters.splice(0)) {
        if (waiter.match(event)) waiter.resolve(event);
        else waiters.push(waiter);
      }
      rest.onEvent?.(event);
    },
  });
  return {
    worker,
    events,
    next(match, what, timeoutMs = 20_000) {
      const seen = events.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no worker event: ${what} (events: ${JSON.stringify(events)})`)), timeoutMs);
        waiters.push({ match, resolve: (e) => { clearTimeout(timer); resolve(e); } });
      });
    },
  };
}

/** A job-end event for a run (optionally with a given outcome). */
export const endOf = (runId: string, outcome?: string) => (e: WorkerEvent) =>
  e.type === 'job-end' && e.runId === runId && (outcome === undefined || e.outcome === outcome);

/** Waits until `check` returns a value other than undefined, polling; fails after `timeoutMs`. */
export async function waitFor<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 20_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Rows of the effects table for one run, by call identity. */
export async function effectsOf(w: WorkerEnv, runId: string): Promise<Record<string, number>> {
  const { rows } = await w.pool.query(`SELECT key, count(*)::int AS n FROM "${w.effectsSchema}".effects WHERE run_id = $1 GROUP BY key`, [runId]);
  return Object.fromEntries((rows as { key: string; n: number }[]).map((r) => [r.key, r.n]));
}

/**
 * `createWorker`: a pool of job slots on graphile-worker that drives Cairn
 * runs. Per job: check the payload (dead-letter it if malformed or for an
 * unknown agent), heartbeat it on the database clock, drive the run (see
 * drive.ts), then end the job: done, retried later with backoff, handed over
 * after a drain, or dead-lettered. A live worker hands the jobs of a worker
 * whose heartbeats stopped back to the queue; the run's lease keeps the two
 * from driving the run at once.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { InvalidOptionsError, type CairnErrorCode } from '../errors/index.js';
import { driveJob, type JobOutcome, type WorkerAgent, type WorkerOps } from './drive.js';
import { WorkerJobError } from './errors.js';
import { graphileLogger, loadGraphile, TASK_IDENTIFIER, type GraphileHelpers, type GraphileRunner } from './graphile.js';
import { parseJobPayload, type JobPayload } from './payload.js';
import { DEFAULT_MAX_ATTEMPTS } from './queue.js';
import { deadLetter, QueueDb, setupQueue } from './queue-db.js';
import type { QueueConnection } from './schema.js';

export interface WorkerRetryOptions {
  /** The first retry's delay; each further one doubles it (with jitter). @default 1000 */
  baseMs?: number;
  /** The longest delay. @default 60000 */
  maxMs?: number;
  /** Deliveries of a job's chain before it is dead-lettered. @default 10 */
  maxAttempts?: number;
}

/** What a worker reports as it goes (for logs and tests). */
export type WorkerEvent =
  | { type: 'job-start'; jobId: string; kind?: string; agent?: string; runId?: string; attempt: number }
  | {
    type: 'job-end'; jobId: string; kind?: string; agent?: string; runId?: string; attempt: number;
    /** done: the run came to rest; skipped: nothing to do; retry; handover (drained); dead (dead-lettered). */
    outcome: 'done' | 'skipped' | 'retry' | 'handover' | 'dead';
    status?: string;
    /** Why a run stopped (`tool-reconciliation-required`, ...), failed (its code), or was skipped. */
    reason?: string;
    code?: CairnErrorCode;
    message?: string;
  }
  | { type: 'unlocked'; workerIds: string[] }
  | { type: 'error'; message: string };

export interface CreateWorkerOptions extends QueueConnection {
  /** Where the runs and their leases live: any Cairn ops store. */
  ops: WorkerOps;
  /** The agents this worker runs, by the name jobs carry. */
  agents: Record<string, WorkerAgent>;
  /** Jobs worked at once. @default 4 */
  concurrency?: number;
  /** The run lease's time to live; a stopped worker's runs are free again after it. @default 30000 */
  leaseTtlMs?: number;
  /** A job whose worker sent no heartbeat for this long is handed back to the queue. @default leaseTtlMs */
  staleAfterMs?: number;
  retry?: WorkerRetryOptions;
  /** How often an idle worker looks for jobs due later (retries); new jobs wake it at once. @default 1000 */
  pollIntervalMs?: number;
  /** @default `<hostname>:<pid>:<random>` */
  workerId?: string;
  onEvent?: (event: WorkerEvent) => void;
  /** What graphile-worker logs. @default warnings and errors to console.warn */
  log?: (level: 'info' | 'warning' | 'error', message: string) => void;
}

export interface Worker {
  readonly workerId: string;
  /** Jobs being worked now. */
  active(): number;
  /**
   * Stops taking jobs, asks every run it drives to stop at its next model-step
   * boundary (the calls in flight finish), puts a resume of each on the queue,
   * gives the leases back and closes. Resolves when all that is done.
   */
  drain(): Promise<void>;
  /** Resolves when the worker has stopped (after `drain`); rejects if graphile-worker stopped on an error. */
  readonly done: Promise<void>;
}

function positive(name: string, value: number | undefined, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new InvalidOptionsError(`createWorker: ${name} must be a whole number of at least ${min}, got ${JSON.stringify(value)}.`);
  }
  return value;
}

/** The delay before retry `n` (1-based): doubling from `baseMs`, capped, with up to half of it as jitter. */
export function backoffMs(n: number, retry: Required<WorkerRetryOptions>, random = Math.random): number {
  const full = Math.min(retry.maxMs, retry.baseMs * 2 ** Math.max(0, n - 1));
  return Math.round(full / 2 + (full / 2) * random());
}

/**
 * Sets up the queue's schema and starts a worker.
 *
 * @example
 * const ops = createPostgresOpsStore({ connectionString: url });
 * await ops.setup();
 * const worker = await createWorker({ connectionString: url, ops, agents: { support: () => ({ model, tools }) } });
 * process.once('SIGTERM', () => void worker.drain());
 */
export async function createWorker(options: CreateWorkerOptions): Promise<Worker> {
  const { ops, agents } = options;
  if (!ops || typeof ops.agentRuns?.load !== 'function' || typeof ops.leases?.acquire !== 'function') {
    throw new InvalidOptionsError('createWorker needs ops: an ops store with agentRuns and leases.');
  }
  if (agents === null || typeof agents !== 'object' || Object.values(agents).some((a) => typeof a !== 'function')) {
    throw new InvalidOptionsError('createWorker needs agents: an object of agent factories, { name: (job) => options }.');
  }
  const concurrency = positive('concurrency', options.concurrency, 4);
  const leaseTtlMs = positive('leaseTtlMs', options.leaseTtlMs, 30_000, 30);
  const staleAfterMs = positive('staleAfterMs', options.staleAfterMs, leaseTtlMs, 30);
  const pollIntervalMs = positive('pollIntervalMs', options.pollIntervalMs, 1000, 10);
  const retry: Required<WorkerRetryOptions> = {
    baseMs: positive('retry.baseMs', options.retry?.baseMs, 1000),
    maxMs: positive('retry.maxMs', options.retry?.maxMs, 60_000),
    maxAttempts: positive('retry.maxAttempts', options.retry?.maxAttempts, DEFAULT_MAX_ATTEMPTS),
  };
  const workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const emit = (event: WorkerEvent) => {
    try {
      options.onEvent?.(event);
    } catch {
      // A listener's mistake is not the job's.
    }
  };
  const log = options.log ?? ((level: string, message: string) => {
    if (level !== 'info') console.warn(`[graphile-worker] ${message}`);
  });

  // graphile-worker keeps one connection for LISTEN; each slot needs one at a time, and heartbeats one more.
  const db = new QueueDb(options, 'createWorker', concurrency + 3);
  await setupQueue(db, log);
  const graphile = await loadGraphile();

  /** job id -> the graphile worker that holds it, and the run's lease key once held. */
  const active = new Map<string, { lockedBy: string; key: string | null }>();
  let draining = false;

  const endJob = async (jobId: string, job: JobPayload, attempt: number, outcome: JobOutcome, raw: unknown) => {
    const base = { type: 'job-end' as const, jobId, kind: job.kind, agent: job.agent, runId: job.runId, attempt };
    if (outcome.type === 'done') {
      emit({ ...base, outcome: outcome.status === 'skipped' ? 'skipped' : 'done', status: outcome.status, ...(outcome.reason ? { reason: outcome.reason } : {}) });
    } else if (outcome.type === 'handover') {
      await db.addJob(undefined, { v: 1, kind: 'resume', agent: job.agent, runId: job.runId, scope: job.scope, answers: {} }, retry.maxAttempts);
      emit({ ...base, outcome: 'handover' });
    } else if (outcome.type === 'retry' && attempt < retry.maxAttempts) {
      await db.addJob(undefined, { ...job, attempt }, retry.maxAttempts, backoffMs(attempt, retry));
      emit({ ...base, outcome: 'retry', code: outcome.code, message: outcome.message });
    } else {
      const why = outcome.type === 'retry' ? `gave up after ${attempt} attempts: ${outcome.message}` : outcome.message;
      await deadLetter(db, { id: jobId, payload: raw }, job, { code: outcome.code, message: why }, attempt);
      emit({ ...base, outcome: 'dead', code: outcome.code, message: why });
    }
  };

  const task = async (payload: unknown, helpers: GraphileHelpers) => {
    const jobId = String(helpers.job.id);
    const lockedBy = helpers.job.locked_by ?? workerId;
    let job: JobPayload | undefined;
    try {
      job = parseJobPayload(payload, jobId);
      if (!Object.hasOwn(agents, job.agent)) {
        const known = Object.keys(agents).map((a) => JSON.stringify(a)).join(', ') || 'none';
        throw new WorkerJobError('job_agent_unknown', `Job names agent ${JSON.stringify(job.agent)}, which this worker was not given (it has ${known}).`, jobId);
      }
    } catch (error) {
      // Nothing of the run is read or written: only the dead letter.
      const e = error as WorkerJobError;
      const about = job ? { kind: job.kind, agent: job.agent, runId: job.runId } : {};
      emit({ type: 'job-start', jobId, ...about, attempt: helpers.job.attempts });
      await deadLetter(db, { id: jobId, payload }, job ?? {}, { code: e.code, message: e.message }, helpers.job.attempts);
      emit({ type: 'job-end', jobId, ...about, attempt: helpers.job.attempts, outcome: 'dead', code: e.code, message: e.message });
      return;
    }
    // Deliveries of the chain so far: earlier retries, plus graphile's count for this job (a worker that died while on it).
    const attempt = (job.attempt ?? 0) + helpers.job.attempts;
    emit({ type: 'job-start', jobId, kind: job.kind, agent: job.agent, runId: job.runId, attempt });
    if (draining) {
      // Taken as the pool was stopping: back on the queue as it was.
      await db.addJob(undefined, job, retry.maxAttempts);
      emit({ type: 'job-end', jobId, kind: job.kind, agent: job.agent, runId: job.runId, attempt, outcome: 'handover' });
      return;
    }
    if (helpers.job.attempts > retry.maxAttempts) {
      await endJob(jobId, job, attempt, {
        type: 'dead', code: 'internal', message: `The job was delivered ${helpers.job.attempts} times and no worker finished it (each stopped while working it).`,
      }, payload);
      return;
    }
    active.set(jobId, { lockedBy, key: null });
    await db.query('Registering a job', `
      INSERT INTO ${db.q}.cairn_worker_jobs (job_id, worker_id, run_id, heartbeat_at) VALUES ($1, $2, $3, now())
      ON CONFLICT (job_id) DO UPDATE SET worker_id = EXCLUDED.worker_id, run_id = EXCLUDED.run_id, heartbeat_at = now()`,
    [jobId, lockedBy, job.runId]);
    let outcome: JobOutcome;
    try {
      outcome = await driveJob({
        job, jobId, attempt, workerId, agent: agents[job.agent]!, ops, leaseTtlMs,
        holding: (key) => {
          const entry = active.get(jobId);
          if (entry) entry.key = key;
        },
        draining: () => draining,
      });
    } finally {
      active.delete(jobId);
    }
    await endJob(jobId, job, attempt, outcome, payload);
    await db.query('Unregistering a job', `DELETE FROM ${db.q}.cairn_worker_jobs WHERE job_id = $1 AND worker_id = $2`, [jobId, lockedBy])
      .catch(() => undefined);
  };

  // Heartbeats for our jobs, and jobs of workers whose heartbeats stopped handed back to the queue.
  const beat = async () => {
    const jobs = [...active.keys()];
    if (jobs.length > 0) {
      await db.query('Heartbeat', `UPDATE ${db.q}.cairn_worker_jobs SET heartbeat_at = now() WHERE job_id = ANY($1::text[])`, [jobs]);
    }
    // A job slot is stale when its job was locked a while ago and has no recent heartbeat: its worker
    // stopped (or lost the database) while on it, maybe before it could write its first heartbeat.
    const stale = await db.query<{ worker_id: string }>('Handing back stale jobs', `
      SELECT DISTINCT j.locked_by AS worker_id FROM ${db.q}.jobs j
      WHERE j.task_identifier = '${TASK_IDENTIFIER}' AND j.locked_by IS NOT NULL
        AND j.locked_at < now() - $1::float8 * interval '1 millisecond'
        AND NOT EXISTS (
          SELECT 1 FROM ${db.q}.cairn_worker_jobs h
          WHERE h.job_id = j.id::text AND h.worker_id = j.locked_by AND h.heartbeat_at >= now() - $1::float8 * interval '1 millisecond')`,
    [staleAfterMs]);
    await db.query('Forgetting stale heartbeats', `
      DELETE FROM ${db.q}.cairn_worker_jobs WHERE heartbeat_at < now() - $1::float8 * interval '1 millisecond'`, [staleAfterMs * 2]);
    if (stale.length > 0) {
      const ids = stale.map((r) => r.worker_id);
      await db.query('Unlocking stale jobs', `SELECT ${db.q}.force_unlock_workers($1::text[])`, [ids]);
      emit({ type: 'unlocked', workerIds: ids });
    }
  };
  let beating: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    beating = beating.then(beat).catch((error: unknown) => emit({ type: 'error', message: `heartbeat: ${error instanceof Error ? error.message : String(error)}` }));
  }, Math.max(10, Math.floor(Math.min(leaseTtlMs, staleAfterMs) / 3)));
  await beat().catch(() => undefined);

  // graphile-worker 0.16 gives up a job slot for good when it cannot record a job's end (the database
  // went away at that moment): the slot's job stays locked, and the pool runs one slot short. The
  // heartbeat sweep hands such a job back; here a new slot takes the lost one's place.
  const events = new EventEmitter();
  const runners: GraphileRunner[] = [];
  const startRunner = async (slots: number) => {
    const runner = await graphile.run({
      pgPool: db.pool, schema: db.schema, concurrency: slots, pollInterval: pollIntervalMs, noHandleSignals: true,
      taskList: { [TASK_IDENTIFIER]: task }, logger: graphileLogger(graphile, log), events, parsedCronItems: [],
    });
    runners.push(runner);
    return runner;
  };
  const replaceSlot = () => {
    if (draining) return;
    startRunner(1).then(
      () => emit({ type: 'error', message: 'a job slot stopped after a database failure; a new one took its place' }),
      () => setTimeout(replaceSlot, pollIntervalMs).unref(),
    );
  };
  events.on('worker:fatalError', replaceSlot);
  try {
    await startRunner(concurrency);
  } catch (error) {
    clearInterval(timer);
    await db.close();
    throw error;
  }

  let drained: Promise<void> | undefined;
  let stopped!: () => void;
  const allStopped = new Promise<void>((resolve) => { stopped = resolve; });
  const drain = () => {
    drained ??= (async () => {
      draining = true;
      const stopping = Promise.all(runners.map((r) => r.stop().catch(() => undefined)));
      await Promise.all([...active.values()].map((entry) => (entry.key ? ops.leases.requestDrain(entry.key).catch(() => undefined) : undefined)));
      await stopping;
      clearInterval(timer);
      await beating.catch(() => undefined);
      await db.close();
      stopped();
    })();
    return drained;
  };
  // Ends with the drain; rejects if the first pool stops on an error of its own before that.
  const done = Promise.race([allStopped, runners[0]!.promise.then(() => allStopped)]);
  done.catch(() => undefined);

  return { workerId, active: () => active.size, drain, done };
}

/**
 * The producer's side of the work queue: put a run or a resume on it, list
 * the jobs workers gave up on, and put those back. Every payload is checked
 * before it is written; a job goes in through graphile-worker's `add_job`,
 * whose NOTIFY wakes an idle worker at once.
 */
import { parseJobPayload, type JobAnswers, type JobPayload } from './payload.js';
import { QueueDb, setupQueue } from './queue-db.js';
import type { QueueConnection } from './schema.js';

/** How many times a job is tried before it is dead-lettered. */
export const DEFAULT_MAX_ATTEMPTS = 10;

export interface WorkQueueOptions extends QueueConnection {
  /**
   * What graphile-worker logs (migrations, connection trouble); debug lines
   * are dropped. @default warnings and errors to console.warn
   */
  log?: (level: 'info' | 'warning' | 'error', message: string) => void;
}

export interface EnqueueRunInput {
  /** The agent's name in the workers' `agents` map. */
  agent: string;
  runId: string;
  scope: string;
  prompt: string;
  /** Not before this many milliseconds from now (on the database clock). @default 0 */
  delayMs?: number;
}

export interface EnqueueResumeInput {
  agent: string;
  runId: string;
  scope: string;
  /** Verdicts, client results or settlements for the stored run (the resume options of the same names). */
  answers: JobAnswers;
  delayMs?: number;
}

/** A job a worker gave up on, as `cairn runs --dead` lists it. */
export interface DeadJob {
  jobId: string;
  kind: string | null;
  agent: string | null;
  runId: string | null;
  scope: string | null;
  /** The Cairn error code of the reason (`job_payload_invalid`, `job_agent_unknown`, `lease_held`, ...). */
  code: string;
  reason: string;
  /** Deliveries of the job's chain before it was given up. */
  attempts: number;
  /** When it was dead-lettered (ms, database clock). */
  deadAt: number;
}

export interface WorkQueue {
  /** The PostgreSQL schema of the queue. */
  readonly schema: string;
  /** Creates or migrates the queue's schema; idempotent. Refuses a newer one with QueueSchemaVersionError. */
  setup(): Promise<void>;
  /** Puts a new run on the queue; a worker starts it. Returns the job's id. */
  enqueueRun(input: EnqueueRunInput): Promise<{ jobId: string }>;
  /** Puts a resume with answers on the queue; a worker resumes the stored run with them. */
  enqueueResume(input: EnqueueResumeInput): Promise<{ jobId: string }>;
  /** Dead-lettered jobs, newest first; `runId` narrows to one run's. */
  listDeadJobs(query?: { runId?: string; limit?: number }): Promise<DeadJob[]>;
  /**
   * Puts dead-lettered jobs back on the queue with a fresh count of attempts:
   * the one with this job id, or else every one of the run with this id.
   * Returns the new jobs' ids (none when nothing matched).
   */
  requeue(jobIdOrRunId: string): Promise<{ requeued: { deadJobId: string; jobId: string }[] }>;
  /** Ends the pool if the queue opened it. */
  close(): Promise<void>;
}

const defaultLog = (level: string, message: string) => {
  if (level !== 'info') console.warn(`[graphile-worker] ${message}`);
};

function delay(value: number | undefined): number {
  if (value === undefined) return 0;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new TypeError(`delayMs must be a finite number of at least 0, got ${JSON.stringify(value)}.`);
  }
  return value;
}

interface DeadRow {
  job_id: string;
  kind: string | null;
  agent: string | null;
  run_id: string | null;
  scope: string | null;
  code: string;
  reason: string;
  attempts: number;
  dead_at: number;
}

const toDead = (r: DeadRow): DeadJob => ({
  jobId: r.job_id, kind: r.kind, agent: r.agent, runId: r.run_id, scope: r.scope,
  code: r.code, reason: r.reason, attempts: r.attempts, deadAt: r.dead_at,
});

/**
 * Opens the work queue.
 *
 * @example
 * const queue = createWorkQueue({ connectionString: process.env.DATABASE_URL! });
 * await queue.setup();
 * await queue.enqueueRun({ agent: 'support', runId: 'ticket-42', scope: 'tenant-a', prompt: 'Answer ticket 42.' });
 * await queue.close();
 */
export function createWorkQueue(options: WorkQueueOptions): WorkQueue {
  const db = new QueueDb(options, 'createWorkQueue');
  const log = options.log ?? defaultLog;
  const add = async (payload: JobPayload, delayMs: number) => ({ jobId: await db.addJob(undefined, payload, DEFAULT_MAX_ATTEMPTS, delayMs) });
  return {
    schema: db.schema,
    setup: () => setupQueue(db, log),
    async enqueueRun(input) {
      const payload = parseJobPayload({ v: 1, kind: 'run', agent: input.agent, runId: input.runId, scope: input.scope, prompt: input.prompt });
      return add(payload, delay(input.delayMs));
    },
    async enqueueResume(input) {
      const payload = parseJobPayload({ v: 1, kind: 'resume', agent: input.agent, runId: input.runId, scope: input.scope, answers: input.answers });
      return add(payload, delay(input.delayMs));
    },
    async listDeadJobs(query = {}) {
      const limit = Math.min(Math.max(1, Math.floor(query.limit ?? 100)), 1000);
      const rows = await db.query<DeadRow>('Listing dead jobs', `
        SELECT job_id, kind, agent, run_id, scope, code, reason, attempts,
          floor(extract(epoch FROM dead_at) * 1000)::float8 AS dead_at
        FROM ${db.q}.cairn_dead_jobs WHERE ($1::text IS NULL OR run_id = $1)
        ORDER BY dead_at DESC, job_id LIMIT $2`, [query.runId ?? null, limit]);
      return rows.map(toDead);
    },
    async requeue(id) {
      return db.transaction(`Requeueing ${id}`, async (tx) => {
        const { rows } = await tx.query(`
          SELECT job_id, payload FROM ${db.q}.cairn_dead_jobs
          WHERE job_id = $1 OR (run_id = $1 AND NOT EXISTS (SELECT 1 FROM ${db.q}.cairn_dead_jobs WHERE job_id = $1))
          ORDER BY dead_at FOR UPDATE`, [id]);
        const requeued: { deadJobId: string; jobId: string }[] = [];
        for (const row of rows as { job_id: string; payload: unknown }[]) {
          // A fresh chain: the count of attempts starts again.
          const payload = row.payload !== null && typeof row.payload === 'object' && !Array.isArray(row.payload)
            ? Object.fromEntries(Object.entries(row.payload).filter(([key]) => key !== 'attempt'))
            : row.payload;
          const jobId = await db.addJob(tx, payload, DEFAULT_MAX_ATTEMPTS);
          await tx.query(`DELETE FROM ${db.q}.cairn_dead_jobs WHERE job_id = $1`, [row.job_id]);
          requeued.push({ deadJobId: row.job_id, jobId });
        }
        return { requeued };
      });
    },
    close: () => db.close(),
  };
}

/** The worker pool's typed errors: a job it cannot take, and a queue schema it must not touch. */
import { CairnError } from '../errors/index.js';

export type WorkerJobErrorCode = 'job_payload_invalid' | 'job_agent_unknown';

/**
 * A job the worker cannot take: its payload is not a Cairn job of a version
 * this worker reads (`job_payload_invalid`), or it names an agent the worker
 * was not given (`job_agent_unknown`). Thrown by `enqueueRun` /
 * `enqueueResume` before anything is written; in a worker, the job is
 * dead-lettered with this error as its reason and nothing else is written.
 */
export class WorkerJobError extends CairnError {
  constructor(
    code: WorkerJobErrorCode,
    message: string,
    /** The queue's id of the job, when the error is about a job on the queue. */
    readonly jobId?: string,
  ) {
    super(code, message, { fault: 'user' });
    this.name = 'WorkerJobError';
  }
}

/**
 * The queue's schema in the database is newer than this code: a newer Cairn
 * (`component: 'cairn'`) or a newer graphile-worker (`'graphile-worker'`)
 * migrated it. Nothing was changed; upgrade every worker before a newer one
 * touches the queue.
 */
export class QueueSchemaVersionError extends CairnError {
  constructor(
    /** The PostgreSQL schema of the queue. */
    readonly schema: string,
    /** Whose version is newer. */
    readonly component: 'cairn' | 'graphile-worker',
    /** The version found in the database. */
    readonly found: number,
    /** The newest version this code knows. */
    readonly supported: number,
  ) {
    super(
      'queue_schema_unsupported',
      `The work queue's schema "${schema}" is at ${component} version ${found}; this Cairn knows versions up to ${supported}. Upgrade Cairn (and its graphile-worker) to use it; the database was not changed.`,
      { fault: 'user' },
    );
    this.name = 'QueueSchemaVersionError';
  }
}

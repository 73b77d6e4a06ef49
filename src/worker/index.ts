/**
 * `cairn/worker`: a pool of workers on a PostgreSQL work queue
 * (graphile-worker, an optional peer) that drives Cairn runs, and the
 * producer's side: put runs and resumes on the queue, list and requeue the
 * jobs workers gave up on. See docs/workers.md.
 */
export { createWorker, backoffMs, type CreateWorkerOptions, type Worker, type WorkerEvent, type WorkerRetryOptions } from './worker.js';
export {
  createWorkQueue, DEFAULT_MAX_ATTEMPTS, type DeadJob, type EnqueueResumeInput, type EnqueueRunInput, type WorkQueue,
  type WorkQueueOptions,
} from './queue.js';
export { parseJobPayload, JOB_PAYLOAD_VERSION, type JobAnswers, type JobPayload, type ResumeJobPayload, type RunJobPayload } from './payload.js';
export type { WorkerAgent, WorkerAgentOptions, WorkerJobContext, WorkerOps } from './drive.js';
export { QueueSchemaVersionError, WorkerJobError, type WorkerJobErrorCode } from './errors.js';
export { QUEUE_SCHEMA_VERSION, type QueueConnection, type QueuePool } from './schema.js';
export { GRAPHILE_WORKER_VERSION } from './graphile.js';

/**
 * What a worker does with one job, once its payload is known good: claim the
 * run's lease, load the run, decide (start, resume, or nothing to do), drive
 * it until it comes to rest, and say what the job's end is. The store's lease
 * and fenced revisions decide who drives a run; the queue only suggests it.
 */
import { agentRunLeaseKey, resumeAgent, runAgent } from '../agent/index.js';
import type {
  AgentOptions, AgentResult, AgentRunEnvelope, AgentRunStore, Lease, LeaseProvider, ResumeOptions,
} from '../agent/types.js';
import { CairnError, type CairnErrorCode } from '../errors/index.js';
import type { JobAnswers, JobPayload } from './payload.js';

/** What an agent factory is told about the job it builds options for. */
export interface WorkerJobContext {
  /** The queue's id of the job. */
  jobId: string;
  kind: JobPayload['kind'];
  /** The agent's name in `agents`. */
  agent: string;
  runId: string;
  scope: string;
  /** Deliveries of this job's chain so far, this one included (1 on the first). */
  attempt: number;
  /** The worker's id (also the lease owner's prefix). */
  workerId: string;
  /**
   * The lease this leg holds on the run (key, owner, fencing token). An
   * effect that must not happen twice across machines can check it in the
   * same transaction as its write: see docs/workers.md, "Fencing an effect".
   */
  lease: Lease;
}

/** The run options an agent needs, less what the worker supplies (session, prompt, lease, answers). */
export type WorkerAgentOptions = Omit<AgentOptions<unknown>, 'session' | 'prompt' | 'lease'>;

/** Builds an agent's run options for a job: the same model, tools and binding on every leg of a run. */
export type WorkerAgent = (job: WorkerJobContext) => WorkerAgentOptions | Promise<WorkerAgentOptions>;

/** The ops store parts a worker uses: any Cairn ops store (PostgreSQL, SQLite, Redis, in memory) has them. */
export interface WorkerOps {
  agentRuns: AgentRunStore;
  leases: LeaseProvider;
}

/** How a job ends. */
export type JobOutcome =
  /** The run came to rest (or had already): the job is done. `skipped`: nothing was run. */
  | { type: 'done'; status: 'completed' | 'suspended' | 'stopped' | 'failed' | 'skipped'; reason?: string }
  /** The run was drained: a resume job goes back on the queue for any worker. */
  | { type: 'handover' }
  /** Not now: try again after a backoff. */
  | { type: 'retry'; code: CairnErrorCode; message: string }
  /** Never: dead-letter it with the reason. */
  | { type: 'dead'; code: CairnErrorCode; message: string };

/** Failures that another attempt can get past: someone else holds the run, or the store or a dependency hiccuped. */
const RETRY_CODES: ReadonlySet<string> = new Set([
  'lease_held', 'lease_lost', 'run_busy', 'revision_conflict', 'persistence_failed', 'breaker_open', 'budget_admission_conflict',
]);

const TERMINAL = new Set(['completed', 'failed', 'stopped']);

export interface DriveInput {
  job: JobPayload;
  jobId: string;
  attempt: number;
  workerId: string;
  agent: WorkerAgent;
  ops: WorkerOps;
  leaseTtlMs: number;
  /** Told the lease key once the leg holds it, and again (null) when it lets go: the drain asks through it. */
  holding(key: string | null): void;
  /** True once the worker drains: a leg that starts then asks its own run to stop at once. */
  draining(): boolean;
}

/** A thrown error as an outcome: a user's mistake is dead-lettered, anything else retried. */
export function outcomeOfError(error: unknown): JobOutcome {
  const message = error instanceof Error ? error.message : String(error);
  if (CairnError.isInstance(error)) {
    if (RETRY_CODES.has(error.code) || error.isRetryable || error.fault !== 'user') return { type: 'retry', code: error.code, message };
    return { type: 'dead', code: error.code, message };
  }
  return { type: 'retry', code: 'internal', message };
}

/** Only the answers the stored run still waits for: a job delivered again after they were applied passes none twice. */
export function applicableAnswers(answers: JobAnswers, record: AgentRunEnvelope): JobAnswers {
  const approvals = new Set(record.pendingApprovals.map((p) => p.approvalId));
  const clientCalls = new Set(record.pendingClientCalls.map((p) => p.toolCallId));
  const unsettled = new Set(Object.values(record.receipts).filter((r) => r.status === 'executing').map((r) => r.toolCallId));
  const out: JobAnswers = {};
  const approvalResponses = answers.approvalResponses?.filter((a) => approvals.has(a.approvalId));
  if (approvalResponses?.length) out.approvalResponses = approvalResponses;
  const clientToolResults = answers.clientToolResults?.filter((c) => clientCalls.has(c.toolCallId));
  if (clientToolResults?.length) out.clientToolResults = clientToolResults;
  const retryToolCallIds = answers.retryToolCallIds?.filter((id) => unsettled.has(id));
  if (retryToolCallIds?.length) out.retryToolCallIds = retryToolCallIds;
  const reconciledToolResults = answers.reconciledToolResults?.filter((r) => unsettled.has(r.toolCallId));
  if (reconciledToolResults?.length) out.reconciledToolResults = reconciledToolResults;
  if (answers.retryFailed && record.status === 'failed' && record.retry) out.retryFailed = true;
  return out;
}

/** Drives the job's run to rest and says how the job ends. Never throws. */
export async function driveJob(input: DriveInput): Promise<JobOutcome> {
  const { job, ops } = input;
  const session = { store: ops.agentRuns, runId: job.runId, scope: job.scope };
  const key = agentRunLeaseKey(session);
  const owner = `${input.workerId}:${input.jobId}`;
  let lease: Lease | null;
  try {
    lease = await ops.leases.acquire(key, owner, input.leaseTtlMs);
  } catch (error) {
    return outcomeOfError(error);
  }
  if (!lease) return { type: 'retry', code: 'lease_held', message: `Another executor holds run ${job.runId}.` };
  input.holding(key);
  try {
    if (input.draining()) await ops.leases.requestDrain(key);
    const record = await ops.agentRuns.load(job.runId, { scope: job.scope });
    const leaseOptions = { provider: ops.leases, owner, ttlMs: input.leaseTtlMs };
    const context: WorkerJobContext = {
      jobId: input.jobId, kind: job.kind, agent: job.agent, runId: job.runId, scope: job.scope,
      attempt: input.attempt, workerId: input.workerId, lease,
    };
    let result: AgentResult<unknown>;
    if (record === undefined) {
      if (job.kind === 'resume') return { type: 'dead', code: 'run_not_found', message: `There is no stored run ${job.runId} to resume.` };
      const options = await input.agent(context);
      result = await runAgent<unknown>({ ...options, prompt: job.prompt, session, lease: leaseOptions });
    } else {
      const retryable = record.status === 'failed' && job.kind === 'resume' && job.answers.retryFailed === true && record.retry;
      if (TERMINAL.has(record.status) && !retryable) return { type: 'done', status: 'skipped', reason: `the run is ${record.status}` };
      // A start job for a run that already waits on a person has nothing to do.
      if (record.status === 'suspended' && job.kind === 'run') return { type: 'done', status: 'skipped', reason: 'the run is suspended' };
      const answers = job.kind === 'resume' ? applicableAnswers(job.answers, record) : {};
      const options = await input.agent(context);
      result = await resumeAgent<unknown>({ ...(options as ResumeOptions<unknown>), ...answers, session, lease: leaseOptions });
    }
    return await outcomeOfResult(result, ops.agentRuns, job);
  } catch (error) {
    return outcomeOfError(error);
  } finally {
    input.holding(null);
    await ops.leases.release(lease).catch(() => undefined);
  }
}

async function outcomeOfResult(result: AgentResult<unknown>, store: AgentRunStore, job: JobPayload): Promise<JobOutcome> {
  switch (result.status) {
    case 'completed':
    case 'suspended':
      return { type: 'done', status: result.status };
    case 'stopped':
      return result.reason === 'drained' ? { type: 'handover' } : { type: 'done', status: 'stopped', reason: result.reason };
    case 'failed': {
      const { code, message } = result.error;
      if (RETRY_CODES.has(code)) return { type: 'retry', code, message };
      // A failure the run saved is the run's end; one it did not save was a refusal.
      const stored = await store.load(job.runId, { scope: job.scope });
      if (stored?.status === 'failed') return { type: 'done', status: 'failed', reason: code };
      return { type: 'dead', code, message };
    }
  }
}

/**
 * The job payload: what `enqueueRun` and `enqueueResume` put on the queue and
 * what a worker accepts. Checked strictly on both sides: a payload with an
 * unknown key, a wrong type or a version this code does not know is refused
 * (at enqueue) or dead-lettered (in a worker) with the reason, before the run
 * is read or written.
 */
import type { ApprovalResponse, ClientToolResult, ReconciledToolResult } from '../agent/types.js';
import { WorkerJobError } from './errors.js';

/** The payload version this code writes and reads. */
export const JOB_PAYLOAD_VERSION = 1;

/** What a resume job carries: the resume options a verdict or a settlement needs. */
export interface JobAnswers {
  approvalResponses?: ApprovalResponse[];
  clientToolResults?: ClientToolResult[];
  retryToolCallIds?: string[];
  reconciledToolResults?: ReconciledToolResult[];
  retryFailed?: boolean;
}

interface PayloadBase {
  v: 1;
  /** The name of the agent in the worker's `agents` map. */
  agent: string;
  runId: string;
  scope: string;
  /** Retries this job's chain has had (the worker sets it when it schedules a retry). @default 0 */
  attempt?: number;
}

/** Starts a run (or goes on with it, when a worker that started it stopped). */
export interface RunJobPayload extends PayloadBase {
  kind: 'run';
  prompt: string;
}

/** Resumes a stored run with answers. */
export interface ResumeJobPayload extends PayloadBase {
  kind: 'resume';
  answers: JobAnswers;
}

export type JobPayload = RunJobPayload | ResumeJobPayload;

const BASE_KEYS = ['v', 'kind', 'agent', 'runId', 'scope', 'attempt'];
const ANSWER_KEYS: readonly (keyof JobAnswers)[] = [
  'approvalResponses', 'clientToolResults', 'retryToolCallIds', 'reconciledToolResults', 'retryFailed',
];
const MAX_ID = 512;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

const shown = (value: unknown) => {
  const text = JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 80 ? `${text.slice(0, 77)}...` : text;
};

/**
 * Checks a payload and returns it typed; throws WorkerJobError
 * (`job_payload_invalid`) saying what is wrong. `jobId` goes on the error.
 */
export function parseJobPayload(value: unknown, jobId?: string): JobPayload {
  const fail = (why: string): never => {
    throw new WorkerJobError('job_payload_invalid', `Job payload is not a Cairn job: ${why}.`, jobId);
  };
  if (!isPlainObject(value)) return fail(`expected an object, got ${shown(value)}`);
  if (value.v !== JOB_PAYLOAD_VERSION) {
    if (typeof value.v === 'number' && Number.isInteger(value.v) && value.v > JOB_PAYLOAD_VERSION) {
      return fail(`its version ${value.v} is newer than this worker reads (${JOB_PAYLOAD_VERSION}); upgrade the worker`);
    }
    return fail(`v must be ${JOB_PAYLOAD_VERSION}, got ${shown(value.v)}`);
  }
  const kind = value.kind;
  if (kind !== 'run' && kind !== 'resume') return fail(`kind must be "run" or "resume", got ${shown(kind)}`);
  const allowed = [...BASE_KEYS, kind === 'run' ? 'prompt' : 'answers'];
  const extra = Object.keys(value).filter((key) => !allowed.includes(key));
  if (extra.length > 0) return fail(`unknown key(s) for a ${kind} job: ${extra.map((k) => JSON.stringify(k)).join(', ')}`);
  for (const key of ['agent', 'runId', 'scope'] as const) {
    const field = value[key];
    if (typeof field !== 'string' || field === '' || field.length > MAX_ID) {
      fail(`${key} must be a non-empty string of at most ${MAX_ID} characters, got ${shown(field)}`);
    }
  }
  const attempt = value.attempt;
  if (attempt !== undefined && !(typeof attempt === 'number' && Number.isInteger(attempt) && attempt >= 0)) {
    fail(`attempt must be a whole number of at least 0, got ${shown(attempt)}`);
  }
  const base = {
    v: 1 as const,
    agent: value.agent as string,
    runId: value.runId as string,
    scope: value.scope as string,
    ...(attempt !== undefined ? { attempt: attempt as number } : {}),
  };
  if (kind === 'run') {
    if (typeof value.prompt !== 'string' || value.prompt === '') return fail(`a run job needs prompt, a non-empty string, got ${shown(value.prompt)}`);
    return { ...base, kind, prompt: value.prompt };
  }
  return { ...base, kind, answers: parseAnswers(value.answers, fail) };
}

function parseAnswers(value: unknown, fail: (why: string) => never): JobAnswers {
  if (!isPlainObject(value)) return fail(`a resume job needs answers, an object, got ${shown(value)}`);
  const extra = Object.keys(value).filter((key) => !(ANSWER_KEYS as readonly string[]).includes(key));
  if (extra.length > 0) return fail(`unknown key(s) in answers: ${extra.map((k) => JSON.stringify(k)).join(', ')}`);
  // The entries' shapes are the resume's to check (it refuses with invalid_options); here only their kinds.
  for (const key of ANSWER_KEYS) {
    const entry = value[key];
    if (entry === undefined) continue;
    if (key === 'retryFailed') {
      if (typeof entry !== 'boolean') fail(`answers.retryFailed must be a boolean, got ${shown(entry)}`);
    } else if (!Array.isArray(entry)) {
      fail(`answers.${key} must be a list, got ${shown(entry)}`);
    } else if (key === 'retryToolCallIds' ? entry.some((id) => typeof id !== 'string') : entry.some((item) => !isPlainObject(item))) {
      fail(`answers.${key} holds an entry of the wrong kind`);
    }
  }
  return value as JobAnswers;
}

/**
 * Bad input: a malformed job payload, a job for an unknown agent, a payload
 * of a newer version and a queue schema migrated by a newer Cairn or
 * graphile-worker. Each is a typed error; a job is dead-lettered with its
 * reason and nothing else is written; a person can list it and requeue it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CairnError } from 'cairn/agent';
import { createWorkQueue, createWorker, parseJobPayload, QueueSchemaVersionError, WorkerJobError } from 'cairn/worker';
import { describePostgres } from '../stores/pg-env.js';
import { endOf, openWorkerEnv, startWorker, type StartedWorker, type WorkerEnv } from './helpers.js';

describe('parseJobPayload', () => {
  const good = { v: 1, kind: 'run', agent: 'chain', runId: 'r', scope: 's', prompt: 'Go.' };
  const bad: [string, unknown, RegExp][] = [
    ['not an object', 'hello', /expected an object/],
    ['an array', [good], /expected an object/],
    ['a newer version', { ...good, v: 2 }, /version 2 is newer than this worker reads \(1\)/],
    ['no version', { ...good, v: undefined }, /v must be 1/],
    ['another kind', { ...good, kind: 'cron' }, /kind must be "run" or "resume"/],
    ['an unknown key', { ...good, priority: 3 }, /unknown key\(s\) for a run job: "priority"/],
    ['a prototype key', JSON.parse('{"v":1,"kind":"run","agent":"a","runId":"r","scope":"s","prompt":"p","__proto__":{"x":1}}'), /"__proto__"/],
    ['an empty run id', { ...good, runId: '' }, /runId must be a non-empty string/],
    ['a scope that is not a string', { ...good, scope: 7 }, /scope must be a non-empty string/],
    ['a run without a prompt', { ...good, prompt: undefined }, /needs prompt/],
    ['a run with answers', { ...good, answers: {} }, /unknown key\(s\) for a run job: "answers"/],
    ['a resume without answers', { v: 1, kind: 'resume', agent: 'a', runId: 'r', scope: 's' }, /needs answers/],
    ['answers with an unknown key', { v: 1, kind: 'resume', agent: 'a', runId: 'r', scope: 's', answers: { approve: true } }, /unknown key\(s\) in answers: "approve"/],
    ['answers of the wrong kind', { v: 1, kind: 'resume', agent: 'a', runId: 'r', scope: 's', answers: { retryToolCallIds: [1] } }, /retryToolCallIds holds an entry/],
    ['a negative attempt', { ...good, attempt: -1 }, /attempt must be a whole number/],
  ];

  it.each(bad)('refuses %s with job_payload_invalid', (_label, payload, message) => {
    let thrown: unknown;
    try {
      parseJobPayload(payload, 'job-1');
    } catch (error) {
      thrown = error;
    }
    expect(WorkerJobError.isInstance(thrown)).toBe(true);
    expect(thrown).toMatchObject({ code: 'job_payload_invalid', fault: 'user', jobId: 'job-1' });
    expect((thrown as Error).message).toMatch(message);
  });

  it('takes a good run and a good resume as they are', () => {
    expect(parseJobPayload(good)).toEqual(good);
    const resume = { v: 1, kind: 'resume', agent: 'a', runId: 'r', scope: 's', answers: { retryFailed: true }, attempt: 2 };
    expect(parseJobPayload(resume)).toEqual(resume);
  });
});

describePostgres('bad jobs on the queue', (env) => {
  let w: WorkerEnv;
  let started: StartedWorker;
  const runsStored = async () => (await w.pool.query(`SELECT count(*)::int AS n FROM "${w.opsSchema}".cairn_runs`)).rows[0].n as number;
  const leasesTaken = async () => (await w.pool.query(`SELECT count(*)::int AS n FROM "${w.opsSchema}".cairn_leases`)).rows[0].n as number;
  /** A job written straight to graphile-worker, as a producer that is not Cairn might. */
  const rawJob = async (payload: unknown) =>
    (await w.pool.query(`SELECT id::text AS id FROM "${w.queueSchema}".add_job('cairn_run', $1::json)`, [JSON.stringify(payload)])).rows[0].id as string;

  beforeAll(async () => {
    w = await openWorkerEnv(env);
    started = await startWorker(w, { leaseTtlMs: 1_000, agents: {} });
  });
  afterAll(async () => {
    await started?.worker.drain();
    await w?.close();
  });

  it('enqueueRun and enqueueResume refuse a malformed job before writing it', async () => {
    await expect(w.queue.enqueueRun({ agent: '', runId: 'r', scope: 's', prompt: 'p' })).rejects.toMatchObject({ code: 'job_payload_invalid' });
    await expect(w.queue.enqueueResume({ agent: 'a', runId: 'r', scope: 's', answers: { nope: 1 } as never }))
      .rejects.toMatchObject({ code: 'job_payload_invalid' });
    const { rows } = await w.pool.query(`SELECT count(*)::int AS n FROM "${w.queueSchema}".jobs`);
    expect(rows[0].n).toBe(0);
  });

  it('dead-letters malformed payloads with the reason, and writes nothing else', async () => {
    const ids = [
      await rawJob({ v: 1, kind: 'run', agent: 'chain', runId: 'm-1', scope: 's' }),
      await rawJob({ v: 2, kind: 'run', agent: 'chain', runId: 'm-2', scope: 's', prompt: 'p' }),
      await rawJob('just text'),
    ];
    for (const id of ids) await started.next((e) => e.type === 'job-end' && e.jobId === id, `job ${id}`);
    const dead = await w.queue.listDeadJobs();
    const byId = Object.fromEntries(dead.map((d) => [d.jobId, d]));
    expect(byId[ids[0]!]).toMatchObject({ code: 'job_payload_invalid', runId: 'm-1', kind: 'run', attempts: 1 });
    expect(byId[ids[0]!]!.reason).toMatch(/needs prompt/);
    expect(byId[ids[1]!]!.reason).toMatch(/version 2 is newer than this worker reads/);
    expect(byId[ids[2]!]).toMatchObject({ code: 'job_payload_invalid', runId: null });
    expect(await runsStored()).toBe(0);
    expect(await leasesTaken()).toBe(0);
  });

  it('dead-letters a job for an agent the worker does not have; requeue hands it to a worker that has it', async () => {
    const { jobId } = await w.queue.enqueueRun({ agent: 'chain', runId: 'u-1', scope: 's', prompt: 'Go.' });
    expect(await started.next(endOf('u-1', 'dead'), 'the dead letter')).toMatchObject({ code: 'job_agent_unknown' });
    expect(await runsStored()).toBe(0);
    expect(await leasesTaken()).toBe(0);
    const [dead] = await w.queue.listDeadJobs({ runId: 'u-1' });
    expect(dead).toMatchObject({ jobId, code: 'job_agent_unknown', agent: 'chain', runId: 'u-1', scope: 's' });
    expect(dead!.reason).toContain('"chain"');

    // A worker with the agent comes up (the first one drains away), and the person requeues by run id.
    await started.worker.drain();
    started = await startWorker(w, { leaseTtlMs: 1_000 });
    const { requeued } = await w.queue.requeue('u-1');
    expect(requeued).toHaveLength(1);
    expect(requeued[0]!.deadJobId).toBe(jobId);
    expect(await started.next(endOf('u-1', 'done'), 'the requeued run')).toMatchObject({ status: 'completed', attempt: 1 });
    expect(await w.queue.listDeadJobs({ runId: 'u-1' })).toEqual([]);
    expect((await w.queue.requeue('no-such-job')).requeued).toEqual([]);
  });
}, { ownDatabase: true });

describePostgres('a queue schema of a newer version', (env) => {
  let w: WorkerEnv;
  beforeAll(async () => {
    w = await openWorkerEnv(env);
  });
  afterAll(async () => w?.close());

  const snapshotOf = async (schema: string) =>
    (await w.pool.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, [schema])).rows;

  it.each([
    ['a newer Cairn', 'cairn_queue_version', 'version', 'cairn'],
    ['a newer graphile-worker', 'migrations', 'id', 'graphile-worker'],
  ] as const)('is refused when %s migrated it, with QueueSchemaVersionError and nothing changed', async (_label, table, column, component) => {
    const schema = env.newSchema();
    const queue = createWorkQueue({ connectionString: env.url, schema });
    await queue.setup();
    await w.pool.query(`INSERT INTO "${schema}".${table} (${column}) VALUES (999)`);
    const before = await snapshotOf(schema);
    for (const attempt of [
      () => queue.setup(),
      () => createWorker({ connectionString: env.url, schema, ops: w.ops, agents: {}, log: () => undefined }),
    ]) {
      const error = await attempt().then(() => undefined, (e: unknown) => e);
      expect(QueueSchemaVersionError.isInstance(error)).toBe(true);
      expect(CairnError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ code: 'queue_schema_unsupported', fault: 'user', schema, component, found: 999 });
    }
    expect(await snapshotOf(schema)).toEqual(before);
    const { rows } = await w.pool.query(`SELECT max(${column})::int AS v FROM "${schema}".${table}`);
    expect(rows[0].v).toBe(999);
    // graphile-worker itself would have set a failing exit code for a newer breaking migration; Cairn never let it look.
    expect(process.exitCode ?? 0).toBe(0);
    await queue.close();
  });
}, { ownDatabase: true });

/**
 * A worker against the local PostgreSQL: it starts queued runs, ends its job
 * when a run suspends, resumes it from a resume job, does nothing for a run
 * that has ended, retries while another executor holds the run, and takes
 * a job delivered twice without running an effect twice.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { agentRunLeaseKey } from 'cairn/agent';
import { describePostgres } from '../stores/pg-env.js';
import { effectKey } from './fixture.js';
import { effectsOf, endOf, openWorkerEnv, startWorker, waitFor, type StartedWorker, type WorkerEnv } from './helpers.js';

describePostgres('a worker on the PostgreSQL queue', (env) => {
  let w: WorkerEnv;
  let started: StartedWorker;
  beforeAll(async () => {
    w = await openWorkerEnv(env);
    started = await startWorker(w, { concurrency: 3, leaseTtlMs: 1_000 });
  });
  afterAll(async () => {
    await started?.worker.drain();
    await w?.close();
  });

  it('starts a queued run and drives it to the end, each effect once', async () => {
    await w.queue.enqueueRun({ agent: 'chain', runId: 'r-start', scope: 'tenant-a', prompt: 'Go.' });
    const end = await started.next(endOf('r-start'), 'the end of r-start');
    expect(end).toMatchObject({ outcome: 'done', status: 'completed', kind: 'run', attempt: 1 });
    const record = await w.ops.agentRuns.load('r-start', { scope: 'tenant-a' });
    expect(record?.status).toBe('completed');
    expect(record?.result?.text).toBe('done r-start');
    expect(await effectsOf(w, 'r-start')).toEqual({ [effectKey('r-start', 0, 's0')]: 1, [effectKey('r-start', 1, 's1')]: 1 });
    // The lease was given back, and no job is left on the queue.
    expect(await w.ops.leases.inspect(agentRunLeaseKey({ runId: 'r-start', scope: 'tenant-a' }))).toBeNull();
    // (graphile-worker deletes the job just after the handler that reported its end returns.)
    await waitFor(async () => ((await w.pool.query(`SELECT count(*)::int AS n FROM "${w.queueSchema}".jobs`)).rows[0].n === 0 ? true : undefined), 'an empty queue');
  });

  it('ends the job when the run suspends, and a resume job with the verdict finishes it', async () => {
    await w.queue.enqueueRun({ agent: 'gate', runId: 'r-gate', scope: 'tenant-a', prompt: 'Publish.' });
    expect(await started.next(endOf('r-gate'), 'the suspension')).toMatchObject({ outcome: 'done', status: 'suspended' });
    const record = await w.ops.agentRuns.load('r-gate', { scope: 'tenant-a' });
    expect(record?.status).toBe('suspended');
    expect(await effectsOf(w, 'r-gate')).toEqual({});
    expect(started.worker.active()).toBe(0); // a suspended run holds no worker
    const [pending] = record!.pendingApprovals;
    await w.queue.enqueueResume({
      agent: 'gate', runId: 'r-gate', scope: 'tenant-a',
      answers: { approvalResponses: [{ approvalId: pending!.approvalId, token: pending!.token, approved: true }] },
    });
    expect(await started.next((e) => endOf('r-gate')(e) && e.type === 'job-end' && e.kind === 'resume', 'the resume'))
      .toMatchObject({ outcome: 'done', status: 'completed' });
    expect((await w.ops.agentRuns.load('r-gate', { scope: 'tenant-a' }))?.result?.text).toBe('published r-gate');
    expect(await effectsOf(w, 'r-gate')).toEqual({ [effectKey('r-gate', 0, 'p0')]: 1 });
  });

  it('runs nothing for a job of a run that has ended: no model call, no effect, no save', async () => {
    const before = await w.ops.agentRuns.load('r-start', { scope: 'tenant-a' });
    await w.queue.enqueueRun({ agent: 'chain', runId: 'r-start', scope: 'tenant-a', prompt: 'Go.' });
    const ends = started.events.filter(endOf('r-start')).length;
    await started.next((e) => endOf('r-start')(e) && started.events.filter(endOf('r-start')).indexOf(e) === ends, 'the second job');
    expect(started.events.filter(endOf('r-start')).at(-1)).toMatchObject({ outcome: 'skipped', status: 'skipped' });
    expect((await w.ops.agentRuns.load('r-start', { scope: 'tenant-a' }))?.revision).toBe(before?.revision);
    expect(Object.values(await effectsOf(w, 'r-start'))).toEqual([1, 1]);
  });

  it('retries with backoff while another executor holds the run, then drives it', async () => {
    const key = agentRunLeaseKey({ runId: 'r-held', scope: 'tenant-a' });
    const other = await w.ops.leases.acquire(key, 'someone-else', 60_000);
    await w.queue.enqueueRun({ agent: 'chain', runId: 'r-held', scope: 'tenant-a', prompt: 'Go.' });
    expect(await started.next(endOf('r-held', 'retry'), 'a retry')).toMatchObject({ code: 'lease_held', attempt: 1 });
    await started.next((e) => endOf('r-held', 'retry')(e) && e.type === 'job-end' && e.attempt === 2, 'a second retry');
    expect(await w.ops.agentRuns.load('r-held', { scope: 'tenant-a' })).toBeUndefined();
    await w.ops.leases.release(other!);
    expect(await started.next(endOf('r-held', 'done'), 'the run')).toMatchObject({ status: 'completed' });
    expect(Object.values(await effectsOf(w, 'r-held'))).toEqual([1, 1]);
  });

  it('takes a job delivered twice at once: one drives the run, the other waits, each effect happens once', async () => {
    for (let i = 0; i < 2; i++) await w.queue.enqueueRun({ agent: 'chain', runId: 'r-twice', scope: 'tenant-a', prompt: 'Go.' });
    await waitFor(async () => (started.events.filter(endOf('r-twice')).some((e) => e.type === 'job-end' && e.outcome === 'skipped')
      || started.events.filter(endOf('r-twice', 'done')).length === 2 ? true : undefined), 'both deliveries to end');
    expect(await effectsOf(w, 'r-twice')).toEqual({ [effectKey('r-twice', 0, 's0')]: 1, [effectKey('r-twice', 1, 's1')]: 1 });
    expect((await w.ops.agentRuns.load('r-twice', { scope: 'tenant-a' }))?.status).toBe('completed');
  });

  it('refuses a run of another tenant: the job is dead-lettered with scope_mismatch and the run is untouched', async () => {
    const before = await w.ops.agentRuns.load('r-start', { scope: 'tenant-a' });
    await w.queue.enqueueResume({ agent: 'chain', runId: 'r-start', scope: 'tenant-b', answers: {} });
    expect(await started.next(endOf('r-start', 'dead'), 'the dead letter')).toMatchObject({ code: 'scope_mismatch' });
    expect((await w.ops.agentRuns.load('r-start', { scope: 'tenant-a' }))?.revision).toBe(before?.revision);
    const dead = await w.queue.listDeadJobs({ runId: 'r-start' });
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ code: 'scope_mismatch', scope: 'tenant-b', kind: 'resume' });
    // The reason says nothing of the other tenant's run.
    expect(dead[0]!.reason).not.toContain('tenant-a');
  });
}, { ownDatabase: true });

/**
 * Workers as processes: one killed inside a tool (its job is handed back once
 * its heartbeats stop, and the run's interrupted call is settled before it
 * goes on), one paused inside a tool past its lease (it wakes with a stale
 * lease and writes nothing: no effect, no save), and one drained by SIGTERM
 * (the step in flight finishes, the run goes back on the queue, exit 0).
 */
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { agentRunLeaseKey } from 'cairn/agent';
import { describePostgres } from '../stores/pg-env.js';
import { effectKey } from './fixture.js';
import { effectsOf, openWorkerEnv, waitFor, type WorkerEnv } from './helpers.js';
import { jobEnd, spawnWorker, stopAll, type Child } from './spawn.js';

describePostgres('worker processes', (env) => {
  let w: WorkerEnv;
  const children: Child[] = [];
  const base = () => ({ url: env.url, opsSchema: w.opsSchema, queueSchema: w.queueSchema, effectsSchema: w.effectsSchema, leaseTtlMs: 1_000 });
  const start = async (name: string, extra: Record<string, unknown> = {}) => {
    const child = await spawnWorker({ ...base(), name, ...extra });
    children.push(child);
    return child;
  };
  const acks = async (runId: string) =>
    (await w.pool.query(`SELECT revision, by_worker FROM "${w.effectsSchema}".acks WHERE run_id = $1 ORDER BY revision`, [runId])).rows as { revision: number; by_worker: string }[];

  beforeAll(async () => {
    w = await openWorkerEnv(env);
  });
  afterEach(async () => {
    await stopAll(children.splice(0));
  });
  afterAll(async () => w?.close());

  it('hands a killed worker\'s job to another; its interrupted call is settled, then the run ends with each effect once', async () => {
    const a = await start('killed-a', { holdInToolMs: 60_000, concurrency: 1 });
    await w.queue.enqueueRun({ agent: 'chain', runId: 'k-1', scope: 's', prompt: 'Go.' });
    await a.line((l) => l.event === 'in-tool' && l.runId === 'k-1', 'in the tool');
    a.process.kill('SIGKILL');
    await a.exited;
    const b = await start('rescuer-b');
    // b hands a's job back once a's heartbeats are stale, takes it, and finds the call's effect unknown.
    const stop = await b.line(jobEnd('k-1'), 'b ends the job');
    expect(stop).toMatchObject({ outcome: 'done', status: 'stopped', attempt: 2 });
    // (graphile-worker's id of a's job slot, which a's heartbeats no longer renewed)
    expect(b.lines.some((l) => l.type === 'unlocked' && (l.workerIds as string[]).length === 1)).toBe(true);
    // Settled by what the effects table says: a died before its effect, so the call runs again.
    expect(await effectsOf(w, 'k-1')).toEqual({});
    await w.queue.enqueueResume({ agent: 'chain', runId: 'k-1', scope: 's', answers: { retryToolCallIds: ['s0'] } });
    await b.line(jobEnd('k-1', 'done'), 'the settled run', 30_000);
    await waitFor(async () => ((await w.ops.agentRuns.load('k-1', { scope: 's' }))?.status === 'completed' ? true : undefined), 'completed');
    expect(await effectsOf(w, 'k-1')).toEqual({ [effectKey('k-1', 0, 's0')]: 1, [effectKey('k-1', 1, 's1')]: 1 });
  });

  it('a worker that wakes after a pause with a stale lease runs no effect and overwrites no save', async () => {
    const a = await start('paused-a', { holdInToolMs: 1_500, concurrency: 1 });
    await w.queue.enqueueRun({ agent: 'chain', runId: 'p-1', scope: 's', prompt: 'Go.' });
    await a.line((l) => l.event === 'in-tool' && l.runId === 'p-1', 'in the tool');
    a.process.kill('SIGSTOP');
    const b = await start('taker-b');
    await b.line(jobEnd('p-1', 'done'), 'b finds the interrupted call');
    expect(await effectsOf(w, 'p-1')).toEqual({});
    await w.queue.enqueueResume({ agent: 'chain', runId: 'p-1', scope: 's', answers: { retryToolCallIds: ['s0'] } });
    await waitFor(async () => ((await w.ops.agentRuns.load('p-1', { scope: 's' }))?.status === 'completed' ? true : undefined), 'b completes it');
    const final = await w.ops.agentRuns.load('p-1', { scope: 's' });
    const before = await acks('p-1');

    // a wakes inside its tool, with its lease long gone.
    a.process.kill('SIGCONT');
    await a.line(jobEnd('p-1'), 'a ends its job', 30_000);
    const after = await w.ops.agentRuns.load('p-1', { scope: 's' });
    expect(after?.revision).toBe(final?.revision);
    expect(after?.result?.text).toBe('done p-1');
    // Every effect once, all by b; a acknowledged no save after b took over.
    const { rows } = await w.pool.query(`SELECT key, by_worker FROM "${w.effectsSchema}".effects WHERE run_id = 'p-1' ORDER BY key`);
    expect(rows).toEqual([{ key: effectKey('p-1', 0, 's0'), by_worker: 'taker-b' }, { key: effectKey('p-1', 1, 's1'), by_worker: 'taker-b' }]);
    expect(await acks('p-1')).toEqual(before);
    const firstOfB = Math.min(...before.filter((r) => r.by_worker === 'taker-b').map((r) => r.revision));
    expect(before.filter((r) => r.by_worker === 'paused-a').every((r) => r.revision < firstOfB)).toBe(true);
    // No revision was acknowledged twice.
    expect(new Set(before.map((r) => r.revision)).size).toBe(before.length);
  });

  it('SIGTERM drains: the step in flight finishes, the runs go back on the queue, the leases are given back, exit 0', async () => {
    const a = await start('drained-a', { holdInToolMs: 600, concurrency: 2 });
    for (const runId of ['d-1', 'd-2']) await w.queue.enqueueRun({ agent: 'chain', runId, scope: 's', prompt: 'Go.' });
    await a.line((l) => l.event === 'in-tool' && l.runId === 'd-1', 'd-1 in its tool');
    await a.line((l) => l.event === 'in-tool' && l.runId === 'd-2', 'd-2 in its tool');
    a.process.kill('SIGTERM');
    expect(await a.exited).toEqual({ code: 0, signal: null });
    for (const runId of ['d-1', 'd-2']) {
      expect(a.lines.find(jobEnd(runId))).toMatchObject({ outcome: 'handover' });
      const record = await w.ops.agentRuns.load(runId, { scope: 's' });
      expect(record?.status).toBe('drained');
      // The call in flight finished and was recorded before the drain.
      expect(Object.values(record!.receipts).map((r) => r.status)).toEqual(['completed']);
      expect(await w.ops.leases.inspect(agentRunLeaseKey({ runId, scope: 's' }))).toBeNull();
    }
    const { rows } = await w.pool.query(`SELECT count(*)::int AS n FROM "${w.queueSchema}".jobs WHERE locked_at IS NULL`);
    expect(rows[0].n).toBe(2);
    const b = await start('next-b');
    for (const runId of ['d-1', 'd-2']) {
      await b.line(jobEnd(runId, 'done'), `${runId} finished by b`);
      expect((await w.ops.agentRuns.load(runId, { scope: 's' }))?.status).toBe('completed');
      expect(await effectsOf(w, runId)).toEqual({ [effectKey(runId, 0, 's0')]: 1, [effectKey(runId, 1, 's1')]: 1 });
    }
  });
}, { ownDatabase: true });

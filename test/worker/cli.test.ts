/**
 * `cairn worker`, `cairn runs --dead` and `cairn requeue`: a worker process
 * started from the command line works queued runs and drains on SIGTERM with
 * exit 0; a person lists what it dead-lettered and requeues it.
 */
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import type { Io } from '../../src/cli/context.js';
import { describePostgres } from '../stores/pg-env.js';
import { effectKey } from './fixture.js';
import { effectsOf, openWorkerEnv, type WorkerEnv } from './helpers.js';
import { spawnNode } from './spawn.js';

async function cairn(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: Io = {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    stdin: Readable.from([]) as unknown as Io['stdin'],
    cwd: process.cwd(),
  };
  const code = await main(argv, io);
  return { code, stdout, stderr };
}

describe('the worker commands refuse a wrong command line before connecting', () => {
  it.each([
    [['worker', '--agents', 'a.js'], /needs --store postgres:\/\//],
    [['worker', '--store', '.cairn/runs.sqlite', '--agents', 'a.js'], /takes a postgres:\/\/ URL/],
    [['worker', '--store', 'postgres://x@127.0.0.1:1/db'], /needs --agents <module>/],
    [['worker', '--store', 'postgres://x@127.0.0.1:1/db', '--agents', 'no-such-file.js'], /--agents no-such-file.js: no such file/],
    [['runs', '--dead'], /needs --store postgres:\/\//],
    [['requeue', '--store', 'postgres://x@127.0.0.1:1/db'], /needs a dead job's id or a run id/],
  ])('cairn %j exits 2', async (argv, message) => {
    const { code, stderr } = await cairn(argv);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });

  it('hides a password in the store it refuses', async () => {
    const { stderr } = await cairn(['worker', '--store', 'mysql://me:secret@db/x', '--agents', 'a.js']);
    expect(stderr).not.toContain('secret');
  });
});

describePostgres('cairn worker from the command line', (env) => {
  let w: WorkerEnv;
  beforeAll(async () => {
    w = await openWorkerEnv(env);
  });
  afterAll(async () => w?.close());

  it('works queued runs, dead-letters an unknown agent\'s job, drains on SIGTERM with exit 0; runs --dead lists it and requeue puts it back', async () => {
    const child = spawnNode('cli-worker', 'test/worker/cli-process.ts', [
      'worker', '--store', env.url, '--agents', 'test/worker/agents-module.ts', '--schema', w.queueSchema,
      '--ops-schema', w.opsSchema, '--lease-ttl', '1000', '--concurrency', '2', '--json',
    ], [], { CAIRN_WORKER_TEST: JSON.stringify({ url: env.url, opsSchema: w.opsSchema, effectsSchema: w.effectsSchema }) });
    try {
      const start = await child.line((l) => l.type === 'worker-start', 'the start line', 60_000);
      expect(start).toMatchObject({ agents: ['chain', 'gate'], concurrency: 2 });
      await w.queue.enqueueRun({ agent: 'chain', runId: 'c-1', scope: 's', prompt: 'Go.' });
      const { jobId } = await w.queue.enqueueRun({ agent: 'translate', runId: 'c-2', scope: 's', prompt: 'Go.' });
      expect(await child.line((l) => l.type === 'job-end' && l.runId === 'c-1', 'c-1 ends')).toMatchObject({ outcome: 'done', status: 'completed' });
      expect(await child.line((l) => l.type === 'job-end' && l.runId === 'c-2', 'c-2 ends')).toMatchObject({ outcome: 'dead', code: 'job_agent_unknown' });
      expect(await effectsOf(w, 'c-1')).toEqual({ [effectKey('c-1', 0, 's0')]: 1, [effectKey('c-1', 1, 's1')]: 1 });
      child.process.kill('SIGTERM');
      expect(await child.exited).toEqual({ code: 0, signal: null });
      expect(child.lines.at(-1)).toMatchObject({ type: 'worker-stop' });

      const listed = await cairn(['runs', '--dead', '--store', env.url, '--schema', w.queueSchema]);
      expect(listed.code).toBe(0);
      const [header, row, ...rest] = listed.stdout.trimEnd().split('\n');
      expect(header).toMatch(/^JOB ID\s+RUN ID\s+CODE\s+ATTEMPTS\s+DEAD AT\s+REASON$/);
      expect(row).toMatch(new RegExp(`^${jobId}\\s+c-2\\s+job_agent_unknown\\s+1\\s+\\d{4}-\\d\\d-\\d\\dT\\S+\\s+Job names agent "translate"`));
      expect(rest).toEqual([]);
      // The prompt is never shown.
      expect(listed.stdout).not.toContain('Go.');
      const json = JSON.parse((await cairn(['runs', '--dead', '--store', env.url, '--schema', w.queueSchema, '--json'])).stdout);
      expect(json.dead).toMatchObject([{ jobId, runId: 'c-2', code: 'job_agent_unknown' }]);

      const requeued = await cairn(['requeue', 'c-2', '--store', env.url, '--schema', w.queueSchema]);
      expect(requeued).toMatchObject({ code: 0 });
      expect(requeued.stdout).toMatch(new RegExp(`^requeued dead job ${jobId} as job \\d+\\n$`));
      expect((await cairn(['runs', '--dead', '--store', env.url, '--schema', w.queueSchema])).stdout).toBe('No dead jobs.\n');
      const again = await cairn(['requeue', 'c-2', '--store', env.url, '--schema', w.queueSchema]);
      expect(again.code).toBe(1);
      expect(again.stdout).toContain('No dead job or run c-2');
    } finally {
      if (child.process.exitCode === null) child.process.kill('SIGKILL');
      await child.exited;
    }
  });
}, { ownDatabase: true });

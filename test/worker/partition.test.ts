/**
 * The partition test. PostgreSQL in the root namespace, reached through a
 * TCP forwarder this test controls on each veth address; three workers, each
 * in a network namespace of its own. Over 200 runs (two tool steps, or one
 * approved step), mid-run and while a worker is inside a tool:
 *
 * - w0 is cut off by taking its link down; its lease lapses; it is healed;
 * - w1 runs with its clock 90 s ahead, and is cut off by iptables DROP;
 * - w2's connections are reset by the forwarder, then it is SIGKILLed and
 *   a new w2 starts in its namespace.
 *
 * Then: no lost write (no save acknowledged twice at one revision, none past
 * what is stored), no effect twice (one row per call identity in the effects
 * table, whose writes are fenced by the lease), every run completed (each
 * approval and each interrupted call answered as designed), figures printed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describePostgres } from '../stores/pg-env.js';
import { duplicateEffects, effectKey } from './fixture.js';
import { openWorkerEnv, type WorkerEnv } from './helpers.js';
import { createWorkerNet, ensureTools, namespaceRefusal, type WorkerNet } from './netns.js';
import { createDriver } from './partition-driver.js';
import { spawnWorker, stopAll, type Child, type Line } from './spawn.js';
import { startProxy, type Proxy } from './tcp-proxy.js';

const RUNS = 200;
const LEASE_TTL_MS = 1_500;
const refusal = namespaceRefusal();

if (refusal !== null) {
  console.warn(`[partition] SKIPPED: ${refusal}. This test needs network namespaces (run as root on a kernel that allows them).`);
  describe.skip('the partition test', () => it('needs network namespaces', () => undefined));
} else {
  describePostgres('the partition test', (env) => {
    let w: WorkerEnv;
    const nets: WorkerNet[] = [];
    const proxies: Proxy[] = [];
    const children: Child[] = [];
    const lines: { worker: string; line: Line }[] = [];
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

    beforeAll(async () => {
      ensureTools();
      w = await openWorkerEnv(env);
      const target = new URL(env.url);
      for (let i = 0; i < 3; i++) {
        nets.push(createWorkerNet(i));
        proxies.push(await startProxy(nets[i]!.hostIp, { host: target.hostname, port: Number(target.port || 5432) }));
      }
    }, 120_000);

    afterAll(async () => {
      await stopAll(children);
      for (const proxy of proxies) await proxy.close();
      for (const net of nets) net.remove();
      await w?.close();
    });

    it('over 200 runs: 0 lost writes, 0 effects twice, every run completed as designed', async () => {
      const started = Date.now();
      const runIds = Array.from({ length: RUNS }, (_, i) => `n-${i}`);
      const agentOf = (runId: string) => (Number(runId.slice(2)) % 4 === 3 ? 'gate' : 'chain');
      const driver = createDriver({ ops: w.ops, queue: w.queue, pool: w.pool, effectsSchema: w.effectsSchema, queueSchema: w.queueSchema, scope: 't', agentOf });

      const spawn = async (i: number, name: string, extra: Record<string, unknown> = {}) => {
        const url = new URL(env.url);
        url.hostname = proxies[i]!.host;
        url.port = String(proxies[i]!.port);
        const child = await spawnWorker({
          url: url.toString(), opsSchema: w.opsSchema, queueSchema: w.queueSchema, effectsSchema: w.effectsSchema,
          name, leaseTtlMs: LEASE_TTL_MS, concurrency: 4, holdInToolMs: 40, ...extra,
        }, nets[i]!.exec);
        children.push(child);
        child.process.stdout!.on('data', () => undefined);
        const seen = new Set<Line>();
        const forward = setInterval(() => {
          for (const line of child.lines) {
            if (seen.has(line)) continue;
            seen.add(line);
            lines.push({ worker: name, line });
            if (line.type === 'job-end' && typeof line.runId === 'string') driver.onJobEnd(line.runId, line.status);
          }
        }, 20);
        void child.exited.then(() => clearInterval(forward));
        return child;
      };

      const workers = [await spawn(0, 'w0'), await spawn(1, 'w1', { clockOffsetMs: 90_000 }), await spawn(2, 'w2')];
      // The runs go on the queue in four batches, the next one after each fault has healed, so a worker is always
      // inside a tool when the next fault waits for it: on a quiet machine the others would otherwise finish every run
      // while one is cut off.
      const BATCH = RUNS / 4;
      let enqueued = 0;
      const enqueueBatch = async () => {
        for (const runId of runIds.slice(enqueued, enqueued + BATCH)) {
          await w.queue.enqueueRun({ agent: agentOf(runId), runId, scope: 't', prompt: `Work on ${runId}.` });
        }
        enqueued = Math.min(RUNS, enqueued + BATCH);
      };
      await enqueueBatch();

      const completed = async () =>
        (await w.pool.query(`SELECT count(*)::int AS n FROM "${w.opsSchema}".cairn_runs WHERE status = 'completed'`)).rows[0].n as number;
      /** Resolves when `worker` is next inside a tool (and the run's progress has passed `atLeast` completed runs). */
      const nextInTool = async (child: Child, atLeast: number) => {
        while ((await completed()) < atLeast) await sleep(100);
        const from = child.lines.length;
        return child.line((l) => l.event === 'in-tool' && child.lines.indexOf(l) >= from, `${child.name} in a tool`, 60_000);
      };
      const faults: string[] = [];
      const cutFor = LEASE_TTL_MS * 2 + 1_000; // past the lease and the heartbeat's staleness, so another worker takes over

      // Each fault waits until all but 35 of the runs on the queue have completed, then for its worker's next tool.
      const ahead = () => enqueued - 35;
      let chaosError: unknown;
      const chaos = (async () => {
        let hit = await nextInTool(workers[0]!, ahead());
        nets[0]!.linkDown();
        faults.push(`w0 link down inside ${hit.runId}/${hit.toolCallId}`);
        await sleep(cutFor);
        nets[0]!.linkUp();
        await enqueueBatch();

        hit = await nextInTool(workers[1]!, ahead());
        nets[1]!.dropOn();
        faults.push(`w1 (clock +90 s) iptables DROP inside ${hit.runId}/${hit.toolCallId}`);
        await sleep(cutFor);
        nets[1]!.dropOff();
        await enqueueBatch();

        hit = await nextInTool(workers[2]!, ahead());
        proxies[2]!.cut();
        faults.push(`w2 connections reset inside ${hit.runId}/${hit.toolCallId}`);
        await sleep(cutFor);
        proxies[2]!.heal();
        await enqueueBatch();

        hit = await nextInTool(workers[2]!, ahead());
        workers[2]!.process.kill('SIGKILL');
        faults.push(`w2 SIGKILLed inside ${hit.runId}/${hit.toolCallId}`);
        await workers[2]!.exited;
        workers[2] = await spawn(2, 'w2b');
      })().catch(async (error: unknown) => {
        chaosError = error;
        while (enqueued < RUNS) await enqueueBatch();
      });

      const deadline = Date.now() + 150_000;
      let done = 0;
      for (;;) {
        done = await completed();
        if (done === RUNS) break;
        if (Date.now() > deadline) break;
        await driver.sweep(runIds);
        await sleep(300);
      }
      await chaos;
      const elapsed = Date.now() - started;

      // Every run completed, with the text its agent ends with.
      const { rows: stored } = await w.pool.query(`SELECT run_id, status FROM "${w.opsSchema}".cairn_runs`);
      const notDone = (stored as { run_id: string; status: string }[]).filter((r) => r.status !== 'completed');
      const diagnose = async (runId: string) => {
        const record = await w.ops.agentRuns.load(runId, { scope: 't' });
        const { rows: jobs } = await w.pool.query(
          `SELECT id, attempts, locked_by, run_at, last_error, payload FROM "${w.queueSchema}"._private_jobs WHERE payload->>'runId' = $1`, [runId]);
        return {
          runId, status: record?.status, revision: record?.revision,
          receipts: Object.values(record?.receipts ?? {}).map((r) => `${r.toolCallId}:${r.status}`),
          lease: await w.ops.leases.inspect(`cairn/agent-run/t/${runId}`), jobs,
          lines: lines.filter((l) => l.line.runId === runId).map((l) => `${l.worker} ${l.line.type ?? l.line.event} ${l.line.outcome ?? ''} ${l.line.status ?? ''} ${l.line.code ?? ''} ${l.line.reason ?? ''}`),
        };
      };
      expect(notDone, JSON.stringify(await Promise.all(notDone.slice(0, 3).map((r) => diagnose(r.run_id))), null, 1)).toEqual([]);
      expect(stored).toHaveLength(RUNS);
      expect(chaosError).toBeUndefined();
      for (const runId of runIds.filter((_, i) => i % 50 === 0)) {
        const record = await w.ops.agentRuns.load(runId, { scope: 't' });
        expect(record?.result?.text).toBe(`${agentOf(runId) === 'gate' ? 'published' : 'done'} ${runId}`);
      }
      // 0 effects twice, and every call's effect exactly once.
      expect(await duplicateEffects(w.pool, w.effectsSchema)).toEqual([]);
      const { rows: effects } = await w.pool.query(`SELECT key FROM "${w.effectsSchema}".effects`);
      const keys = new Set((effects as { key: string }[]).map((r) => r.key));
      const expected = runIds.flatMap((runId) => (agentOf(runId) === 'gate'
        ? [effectKey(runId, 0, 'p0')] : [effectKey(runId, 0, 's0'), effectKey(runId, 1, 's1')]));
      expect([...keys].sort()).toEqual([...expected].sort());
      // 0 lost writes: no revision acknowledged twice, none past what is stored.
      const { rows: twice } = await w.pool.query(`SELECT run_id, revision, count(*)::int AS n FROM "${w.effectsSchema}".acks GROUP BY 1, 2 HAVING count(*) > 1`);
      expect(twice).toEqual([]);
      const { rows: past } = await w.pool.query(`
        SELECT a.run_id, a.revision, r.revision AS stored FROM "${w.effectsSchema}".acks a
        JOIN "${w.opsSchema}".cairn_runs r ON r.run_id = a.run_id WHERE a.revision > r.revision`);
      expect(past).toEqual([]);
      expect(driver.errors).toEqual([]);
      expect(await w.queue.listDeadJobs()).toEqual([]);

      const ends = lines.filter((l) => l.line.type === 'job-end');
      const count = (pred: (l: Line) => boolean) => ends.filter((l) => pred(l.line)).length;
      const { rows: acks } = await w.pool.query(`SELECT count(*)::int AS n FROM "${w.effectsSchema}".acks`);
      console.log([
        `[partition] ${RUNS} runs in ${(elapsed / 1000).toFixed(1)} s across 3 worker namespaces: ${done} completed`,
        `[partition] faults: ${faults.join('; ')}`,
        `[partition] effects: ${keys.size} (expected ${expected.length}), twice: 0; saves acknowledged: ${acks[0].n}, lost: 0`,
        `[partition] jobs: ${ends.length} ended (${count((l) => l.outcome === 'done')} done, ${count((l) => l.outcome === 'skipped')} skipped, `
          + `${count((l) => l.outcome === 'retry')} retried, ${count((l) => l.outcome === 'handover')} handed over, 0 dead); `
          + `stale jobs handed back: ${lines.filter((l) => l.line.type === 'unlocked').length}`,
        `[partition] by design: ${driver.figures.approved} approvals answered, interrupted calls settled: `
          + `${driver.figures.retried} run again, ${driver.figures.reconciled} reconciled (the effect had happened)`,
      ].join('\n'));
      expect(faults).toHaveLength(4);
    }, 200_000);
  }, { ownDatabase: true });
}

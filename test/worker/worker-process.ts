/**
 * One worker process for the worker tests: createWorker on the test's
 * schemas with the fixture agents, every event printed as a JSON line.
 * Every save the store acknowledges is recorded in the `acks` table (run,
 * revision, worker), so a test can tell a lost write. SIGTERM drains the
 * worker and exits 0. Faults on request: a clock offset for this process
 * (Date.now and the run's clock run ahead or behind), and a tool delay.
 *
 *   node --conditions=source --import tsx test/worker/worker-process.ts '<json args>'
 */
import pg from 'pg';
import type { AgentRunStore } from 'cairn/agent';
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import { createWorker } from 'cairn/worker';
import { fixtureAgents } from './fixture.js';

export interface WorkerProcessArgs {
  url: string;
  opsSchema: string;
  queueSchema: string;
  effectsSchema: string;
  name: string;
  concurrency?: number;
  leaseTtlMs: number;
  toolDelayMs?: number;
  /** Added to this process's Date.now: a clock that runs ahead (or behind, negative). */
  clockOffsetMs?: number;
  /** Print `{"event":"in-tool",...}` when a tool starts, and wait this long before its effect. */
  holdInToolMs?: number;
}

const args = JSON.parse(process.argv[2]!) as WorkerProcessArgs;
if (args.clockOffsetMs) {
  const realNow = Date.now.bind(Date);
  Date.now = () => realNow() + args.clockOffsetMs!;
}
const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

const pool = new pg.Pool({ connectionString: args.url, max: 4, allowExitOnIdle: true });
pool.on('error', () => undefined);
const ops = createPostgresOpsStore({ connectionString: args.url, poolOptions: { max: 6 } }, { schema: args.opsSchema });
const store = ops.agentRuns;
const acked: AgentRunStore = {
  load: (runId, options) => store.load(runId, options),
  async save(envelope, options) {
    await store.save(envelope, options);
    // Acknowledged: this revision is now what the worker believes is stored.
    await pool.query(`INSERT INTO "${args.effectsSchema}".acks (run_id, revision, by_worker) VALUES ($1, $2, $3)`, [envelope.runId, envelope.revision, args.name])
      .catch(() => undefined);
  },
};

const worker = await createWorker({
  connectionString: args.url,
  schema: args.queueSchema,
  ops: { agentRuns: acked, leases: ops.leases },
  agents: fixtureAgents({
    effectsSchema: args.effectsSchema, opsSchema: args.opsSchema, pool, by: args.name,
    ...(args.toolDelayMs ? { toolDelayMs: args.toolDelayMs } : {}),
    ...(args.holdInToolMs
      ? {
        onTool: async (job, toolCallId) => {
          print({ event: 'in-tool', runId: job.runId, toolCallId, pid: process.pid, owner: job.lease.owner });
          await new Promise((resolve) => setTimeout(resolve, args.holdInToolMs));
        },
      }
      : {}),
  }),
  concurrency: args.concurrency ?? 4,
  leaseTtlMs: args.leaseTtlMs,
  pollIntervalMs: 100,
  retry: { baseMs: 100, maxMs: 1_000, maxAttempts: 30 },
  workerId: args.name,
  log: (level, message) => print({ event: 'log', level, message }),
  onEvent: (event) => print({ event: 'worker', worker: args.name, ...event }),
});
print({ event: 'ready', worker: args.name, pid: process.pid });
process.once('SIGTERM', () => {
  print({ event: 'draining', worker: args.name });
  void worker.drain();
});
await worker.done;
await ops.close();
await pool.end();
print({ event: 'stopped', worker: args.name });

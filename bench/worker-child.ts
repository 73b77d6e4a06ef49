/**
 * One worker process of the worker bench (forked): createWorker on the
 * bench's schemas with the bench agent. Says `ready` over IPC; on `stop` it
 * drains, reports the saves it made and the CPU it spent since `ready`, and exits.
 */
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import { createWorker } from 'cairn/worker';
import { benchAgents, counting } from './worker-agent.js';

const args = JSON.parse(process.argv[2]!) as { url: string; opsSchema: string; queueSchema: string; concurrency: number };
const ops = createPostgresOpsStore({ connectionString: args.url, poolOptions: { max: args.concurrency + 1 } }, { schema: args.opsSchema });
const counted = counting(ops.agentRuns);
const worker = await createWorker({
  connectionString: args.url, schema: args.queueSchema, ops: { agentRuns: counted.store, leases: ops.leases },
  agents: benchAgents, concurrency: args.concurrency, leaseTtlMs: 30_000, log: () => undefined,
});
const cpuAtReady = process.cpuUsage();
process.send!({ type: 'ready' });
process.on('message', async (message: { type: string }) => {
  if (message.type !== 'stop') return;
  await worker.drain();
  await ops.close();
  const cpu = process.cpuUsage(cpuAtReady);
  process.send!({ type: 'stopped', saves: counted.saves(), cpuMs: (cpu.user + cpu.system) / 1000 }, () => process.exit(0));
});

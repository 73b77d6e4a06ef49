/**
 * The SQLite store of this checkout against the one of another checkout (an
 * earlier commit, for a before/after), in one process, their rounds
 * alternating, so both are measured under the same load (issue 16; on the
 * shared machines of this project the load moves several-fold within a
 * minute, and two bench runs a few minutes apart measure the machine).
 *
 * Each round, on each store, on a file of its own: the saves of one recorded
 * 100-step tool loop replayed under a new run id (wall time and process CPU
 * time per step: the store's encoding, planning and commits, no engine); then
 * a load of a suspended run of 100 and of 1,000 steps through a store object
 * opened for it (a resume's load: what it reads and checks), process CPU time.
 * Medians over the rounds, and the WAL frames per commit of the replay.
 *
 *   CAIRN_AB_OTHER=/path/to/other/checkout npx tsx --conditions=source bench/durable-ab.ts [rounds]
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AgentRunEnvelope, AgentRunStore } from 'cairn/agent';

interface OpsModule {
  createSqliteOpsStore(options: { path: string }): { agentRuns: AgentRunStore; close(): void };
  connectionOf(ops: unknown): { pragma(text: string, options?: { simple: boolean }): unknown };
}

const STEPS = 100;

type ToolLoop = (store: AgentRunStore, runId: string, steps: number, model: 'bare', extra: object) => Promise<unknown>;

/**
 * The envelopes one loop saves, as the engine of the checkout at `root` handed them (see bench/index.ts
 * recordEnvelopes). Each side records its own: an engine envelope leaves its receipts record unbuilt, and only the
 * code that built it knows the lists it comes from (see lazyReceipts in src/agent/envelope.ts). Another checkout's
 * store would take it for a caller's envelope, build the record and lay the receipts out as parts.
 */
async function record(root: string, steps: number, suspend: boolean): Promise<AgentRunEnvelope[]> {
  const { toolLoop } = await import(pathToFileURL(join(root, 'bench', 'tool-loop.ts')).href) as { toolLoop: ToolLoop };
  const envelopes: AgentRunEnvelope[] = [];
  const store: AgentRunStore = { load: async () => undefined, save: async (envelope) => void envelopes.push(envelope) };
  const extra = suspend ? { maxSteps: steps } : {};
  await toolLoop(store, 'recorded', steps, 'bare', extra);
  return envelopes;
}

function withRunId(envelope: AgentRunEnvelope, runId: string): AgentRunEnvelope {
  const descriptors = Object.getOwnPropertyDescriptors(envelope);
  descriptors.runId = { value: runId, writable: true, enumerable: true, configurable: true };
  return Object.defineProperties({}, descriptors) as AgentRunEnvelope;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function side(label: string, root: string) {
  const loop = await record(root, STEPS, false);
  const long = [await record(root, 100, true), await record(root, 1000, true)];
  const ops = await import(pathToFileURL(join(root, 'src/stores/sqlite/index.ts')).href) as OpsModule;
  const dir = mkdtempSync(join(tmpdir(), `cairn-ab-${label}-`));
  const path = join(dir, 'runs.sqlite');
  const store = ops.createSqliteOpsStore({ path });
  for (const [i, envelopes] of long.entries()) for (const envelope of envelopes) await store.agentRuns.save(withRunId(envelope, `long-${i}`));
  let n = 0;
  const out = { label, wall: [] as number[], cpu: [] as number[], load: long.map(() => [] as number[]), frames: 0 };
  return {
    out,
    async round() {
      const runId = `replay-${n++}`;
      const db = ops.connectionOf(store);
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.pragma('wal_autocheckpoint = 0');
      const walBefore = statSync(`${path}-wal`).size;
      const cpu = process.cpuUsage();
      const started = performance.now();
      for (const envelope of loop) await store.agentRuns.save(withRunId(envelope, runId));
      const wall = performance.now() - started;
      const used = process.cpuUsage(cpu);
      out.frames = (statSync(`${path}-wal`).size - walBefore) / 1048 / loop.length;
      db.pragma('wal_autocheckpoint = 1000');
      out.wall.push(wall / STEPS);
      out.cpu.push((used.user + used.system) / 1000 / STEPS);
      db.pragma('wal_checkpoint(TRUNCATE)');
      for (const [i] of long.entries()) {
        const reader = ops.createSqliteOpsStore({ path });
        // CPU time: the load is synchronous work of this process (better-sqlite3), which a busy machine's other
        // processes do not add to, as they add to its wall time.
        const t = process.cpuUsage();
        const envelope = await reader.agentRuns.load(`long-${i}`);
        const spent = process.cpuUsage(t);
        out.load[i]!.push((spent.user + spent.system) / 1000);
        if (!envelope) throw new Error('not loaded');
        reader.close();
      }
    },
    close() {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const rounds = Number(process.argv[2] ?? 9);
const other = process.env.CAIRN_AB_OTHER;
const sides = [await side('this', resolve('.'))];
if (other) sides.push(await side('other', resolve(other)));
for (let r = 0; r < rounds; r++) for (const s of (r % 2 ? [...sides].reverse() : sides)) await s.round();
console.log(`| checkout | saves alone, ms a step (wall) | CPU ms a step | WAL frames a commit | load of a 100-step run, CPU ms | of a 1,000-step run, CPU ms |`);
console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
for (const { out } of sides) {
  console.log(`| ${out.label} | ${median(out.wall).toFixed(3)} | ${median(out.cpu).toFixed(3)} | ${out.frames.toFixed(2)} | ${median(out.load[0]!).toFixed(2)} | ${median(out.load[1]!).toFixed(2)} |`);
}
for (const s of sides) s.close();

/**
 * What a live run retains, counted rather than timed (issue 16, memory):
 * RUNS tool loops of STEPS steps at once on the in-memory agent run store, and
 * every EVERY saves a full collection (--expose-gc) inside the save, so the
 * heap in use is what the live runs retain at that moment, no garbage. Beside
 * it the live history at that moment: the JSON bytes of every run's stored
 * transcript and receipts. Prints the retained bytes per run and per byte of
 * live history, which depend on the code, not on the machine's load.
 *
 *   node --expose-gc --conditions=source --import tsx bench/memory-retained.ts
 *   CAIRN_HEAP_SNAPSHOT=1 also writes a heap snapshot at the middle sample;
 *   CAIRN_RETAINED_STORE=<path of a module> takes createInMemoryAgentRunStore from there
 *   (an older copy of src/stores/in-memory.ts, for an A/B of what a change retains).
 *
 * The last row is taken after every run ended, their results still held.
 */
import { writeHeapSnapshot } from 'node:v8';
import { createInMemoryAgentRunStore as current, type AgentRunStore } from 'cairn/agent';
const createInMemoryAgentRunStore: typeof current = process.env.CAIRN_RETAINED_STORE ? (await import(process.env.CAIRN_RETAINED_STORE)).createInMemoryAgentRunStore : current;
import { toolLoop } from './tool-loop.js';

const RUNS = Number(process.env.CAIRN_BENCH_MEMORY_RUNS ?? 100);
const STEPS = Number(process.env.CAIRN_BENCH_MEMORY_STEPS ?? 100);
const EVERY = Number(process.env.CAIRN_BENCH_RETAINED_EVERY ?? 2_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('memory-retained: run with --expose-gc');

{
  const warm = createInMemoryAgentRunStore();
  await Promise.all(Array.from({ length: 10 }, (_, i) => toolLoop(warm, `warm-${i}`, STEPS, 'bare')));
}
gc();
gc();
const base = process.memoryUsage().heapUsed;
const inner = createInMemoryAgentRunStore();
const ids = Array.from({ length: RUNS }, (_, i) => `run-${i}`);
let saves = 0;
let snapped = false;
const rows: { saves: number; retained: number; live: number; store: number }[] = [];

async function liveHistory(): Promise<{ live: number; store: number }> {
  let live = 0;
  let store = 0;
  for (const id of ids) {
    const e = await inner.load(id);
    if (!e) continue;
    store += Buffer.byteLength(JSON.stringify(e));
    const messages = (e.snapshot as { context: { messages: unknown[] } }).context.messages;
    live += Buffer.byteLength(JSON.stringify(messages)) + Buffer.byteLength(JSON.stringify(e.receipts));
  }
  return { live, store };
}

const store: AgentRunStore = {
  load: (runId, options) => inner.load(runId, options),
  async save(envelope, options) {
    if (++saves % EVERY === 0) {
      gc!();
      gc!();
      const retained = process.memoryUsage().heapUsed - base;
      rows.push({ saves, retained, ...(await liveHistory()) });
      if (process.env.CAIRN_HEAP_SNAPSHOT && !snapped && saves >= (RUNS * STEPS)) {
        snapped = true;
        console.log('snapshot:', writeHeapSnapshot('/tmp/m/mid.heapsnapshot'));
      }
    }
    return inner.save(envelope, options);
  },
};
const results = await Promise.all(ids.map((id) => toolLoop(store, id, STEPS, 'bare')));
for (const r of results) if (r.status !== 'completed') throw new Error(`a run ended ${r.status}`);
gc();
gc();
rows.push({ saves, retained: process.memoryUsage().heapUsed - base, ...(await liveHistory()) });
const mb = (n: number) => (n / 1024 / 1024).toFixed(2);
console.log(`${RUNS} runs of ${STEPS} steps at once; a collection every ${EVERY} saves (heap in use after it, less the heap before the runs)`);
console.log('| saves | retained MB | live history MB | retained / live history | store envelopes, JSON MB | retained per run kB |');
console.log('| ---: | ---: | ---: | ---: | ---: | ---: |');
// The last row: every run ended, the results still held.
for (const r of rows) {
  console.log(`| ${r.saves} | ${mb(r.retained)} | ${mb(r.live)} | ${(r.retained / r.live).toFixed(2)}x | ${mb(r.store)} | ${(r.retained / RUNS / 1024).toFixed(1)} |`);
}

/**
 * The baseline of the memory section (bench/memory.ts): the simplest design
 * of a durable loop, measured the same way as Cairn's (bench/memory-worker.ts):
 * a forked process, warmed up, its heap settled, its resident size the
 * baseline, then RUNS bare XState v5 loops (bench/xstate-baseline.ts) of STEPS steps at once. Each loop
 * keeps its transcript in its context (every turn and every tool result,
 * each result with the 200-character pad of bench/tool-loop.ts) and
 * checkpoints twice a step, as Cairn saves a step: after the model turn and
 * after the tool result, each checkpoint `getPersistedSnapshot()` turned into
 * a JSON string and kept in a Map by run, replacing the run's last one (a
 * minimal store). No receipts, events, leases or envelope: what it costs is
 * XState's and the checkpoints' JSON, nothing of Cairn's.
 *
 * Its live history is the JSON of the transcripts at the end; the figure to
 * read is its peak growth against that, beside Cairn's.
 */
import { createActor, fromPromise, type AnyActorRef } from 'xstate';
import { baselineMachine, type BaselineContext } from './xstate-baseline.js';
import { oldSpaceCap, peakRss, resetPeak, rss, sampler, settle, type MemoryReport } from './memory-probe.js';

const RUNS = Number(process.env.CAIRN_BENCH_MEMORY_RUNS ?? 100);
const STEPS = Number(process.env.CAIRN_BENCH_MEMORY_STEPS ?? 100);
const SAMPLE_EVERY = 20;

/** One loop to its end, checkpointing into `store`; resolves with its final context. */
function loop(store: Map<string, string>, runId: string, onCheckpoint: () => void): Promise<BaselineContext> {
  let actor: AnyActorRef | null = null;
  const provided = baselineMachine.provide({
    actors: {
      checkpoint: fromPromise<void, { at: 'turn' | 'step' }>(async () => {
        onCheckpoint();
        store.set(runId, JSON.stringify(actor!.getPersistedSnapshot()));
      }),
    },
  });
  return new Promise((resolve, reject) => {
    const a = createActor(provided, { input: { steps: STEPS, keepTranscript: true } });
    actor = a;
    a.subscribe({ complete: () => resolve(a.getSnapshot().context), error: reject });
    a.start();
  });
}

// Warm-up: the same code paths as the measured runs (a few at once), then a settled heap.
{
  const warm = new Map<string, string>();
  for (let round = 0; round < 3; round++) {
    await Promise.all(Array.from({ length: 10 }, (_, i) => loop(warm, `warm-${round}-${i}`, () => undefined)));
  }
}
await settle();
const baselineRss = rss();
const baselineHeap = process.memoryUsage().heapUsed;
const peakMethod = resetPeak();
const sample = sampler(SAMPLE_EVERY, baselineRss);
const store = new Map<string, string>();

const started = performance.now();
const results = await Promise.all(Array.from({ length: RUNS }, (_, i) => loop(store, `run-${i}`, sample.tick)));
const seconds = (performance.now() - started) / 1000;
sample.seen.rss = Math.max(sample.seen.rss, rss());
const peak = peakRss(peakMethod);
const heapUsedAtEnd = process.memoryUsage().heapUsed;

let liveHistoryBytes = 0;
let storeJsonBytes = 0;
for (const r of results) {
  if (r.transcript?.length !== 2 * STEPS) throw new Error('memory baseline: a loop ended early');
  liveHistoryBytes += Buffer.byteLength(JSON.stringify(r.transcript));
}
for (const json of store.values()) storeJsonBytes += Buffer.byteLength(json);

await settle();
const report: MemoryReport = {
  runs: RUNS, steps: STEPS, baselineRss, baselineHeap, oldSpaceCapMb: oldSpaceCap(), peakRss: peak, peakMethod, sampledPeakRss: sample.seen.rss, sampledPeakHeap: sample.seen.heap,
  liveHistoryBytes, transcriptBytes: liveHistoryBytes, heapUsedAtEnd, heapUsedAfterGc: process.memoryUsage().heapUsed, storeJsonBytes, seconds,
};
if (results.length !== RUNS || store.size !== RUNS) throw new Error('memory baseline: results lost');
process.send!(report, () => process.disconnect());

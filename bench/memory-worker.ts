/**
 * The process the memory section (bench/memory.ts) measures for Cairn,
 * forked with an IPC channel and --expose-gc. It warms up, settles its heap
 * and takes its resident size as the baseline; then drives RUNS tool loops
 * of STEPS steps at once on the in-memory agent run store (so what grows is
 * the engine's memory and the store's copy of each run, no database driver),
 * and reports the peak resident size it reached from the baseline on, with
 * the JSON bytes of the runs' transcripts and receipts at the end.
 * bench/memory-xstate-worker.ts measures the bare XState loop the same way
 * (bench/memory-probe.ts holds what both measure with).
 */
import { createInMemoryAgentRunStore, type AgentRunStore } from 'cairn/agent';
import { oldSpaceCap, peakRss, resetPeak, rss, sampler, settle, type MemoryReport } from './memory-probe.js';
import { toolLoop } from './tool-loop.js';

export type { MemoryReport } from './memory-probe.js';

const RUNS = Number(process.env.CAIRN_BENCH_MEMORY_RUNS ?? 100);
const STEPS = Number(process.env.CAIRN_BENCH_MEMORY_STEPS ?? 100);
/** Saves between two samples of the sampler (about 1,000 samples over the runs). */
const SAMPLE_EVERY = 20;

// Warm-up: the same code paths as the measured runs (a few at once), then a settled heap.
{
  const warm = createInMemoryAgentRunStore();
  for (let round = 0; round < 3; round++) {
    await Promise.all(Array.from({ length: 10 }, (_, i) => toolLoop(warm, `warm-${round}-${i}`, STEPS, 'bare')));
  }
}
await settle();
const baselineRss = rss();
const baselineHeap = process.memoryUsage().heapUsed;
const peakMethod = resetPeak();
const sample = sampler(SAMPLE_EVERY, baselineRss);
const inner = createInMemoryAgentRunStore();
const store: AgentRunStore = {
  load: (runId, options) => inner.load(runId, options),
  save(envelope, options) {
    sample.tick();
    return inner.save(envelope, options);
  },
};

const started = performance.now();
const results = await Promise.all(Array.from({ length: RUNS }, (_, i) => toolLoop(store, `run-${i}`, STEPS, 'bare')));
const seconds = (performance.now() - started) / 1000;
sample.seen.rss = Math.max(sample.seen.rss, rss());
const peak = peakRss(peakMethod);
for (const r of results) if (r.status !== 'completed') throw new Error(`memory: a run ended ${r.status}`);

const heapUsedAtEnd = process.memoryUsage().heapUsed;

// The live history: what the runs hold at the end, as JSON.
let liveHistoryBytes = 0;
let transcriptBytes = 0;
let storeJsonBytes = 0;
for (let i = 0; i < RUNS; i++) {
  const envelope = (await store.load(`run-${i}`))!;
  storeJsonBytes += Buffer.byteLength(JSON.stringify(envelope));
  const context = (envelope.snapshot as { context: { messages: unknown[] } }).context;
  const transcript = Buffer.byteLength(JSON.stringify(context.messages));
  transcriptBytes += transcript;
  liveHistoryBytes += transcript + Buffer.byteLength(JSON.stringify(envelope.receipts));
}

await settle();
const report: MemoryReport = {
  runs: RUNS, steps: STEPS, baselineRss, baselineHeap, oldSpaceCapMb: oldSpaceCap(), peakRss: peak, peakMethod, sampledPeakRss: sample.seen.rss, sampledPeakHeap: sample.seen.heap,
  liveHistoryBytes, transcriptBytes, heapUsedAtEnd, heapUsedAfterGc: process.memoryUsage().heapUsed, storeJsonBytes, seconds,
};
// Held to here, so the collection above measures what a caller keeping the results keeps.
if (results.length !== RUNS) throw new Error('memory: results lost');
process.send!(report, () => process.disconnect());

/**
 * The process the memory section (bench/memory.ts) measures, forked with an
 * IPC channel and --expose-gc. It warms up, settles its heap and takes its
 * resident size as the baseline; then drives RUNS tool loops of STEPS steps
 * at once on the in-memory agent run store (so what grows is the engine's
 * memory and the store's one JSON copy of each run, no database driver), and
 * reports the peak resident size it reached from the baseline on, with the
 * JSON bytes of the runs' transcripts and receipts at the end.
 *
 * The peak is the kernel's: VmHWM of /proc/self/status, reset to the current
 * size after the baseline by writing 5 to /proc/self/clear_refs (Linux 4.0+);
 * where that is refused, process.resourceUsage().maxRSS (the peak since the
 * process started, the warm-up included). A sampler of the resident size and
 * of the V8 heap in use, every 20th save, runs beside it as a cross-check.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createInMemoryAgentRunStore, type AgentRunStore } from 'cairn/agent';
import { toolLoop } from './tool-loop.js';

export interface MemoryReport {
  runs: number;
  steps: number;
  baselineRss: number;
  peakRss: number;
  peakMethod: 'VmHWM after clear_refs' | 'maxRSS since start';
  sampledPeakRss: number;
  /** The largest V8 heap in use the sampler saw. */
  sampledPeakHeap: number;
  liveHistoryBytes: number;
  heapUsedAtEnd: number;
  /** After the runs, a collection: what stays (the store's copies, the results). */
  heapUsedAfterGc: number;
  /** What the in-memory store holds: the JSON of each run's last envelope. */
  storeJsonBytes: number;
  seconds: number;
}

const RUNS = Number(process.env.CAIRN_BENCH_MEMORY_RUNS ?? 100);
const STEPS = Number(process.env.CAIRN_BENCH_MEMORY_STEPS ?? 100);
/** Saves between two samples of the sampler (about 1,000 samples over the runs). */
const SAMPLE_EVERY = 20;

/** A field of /proc/self/status in bytes (its values are in kB), or null off Linux. */
function status(field: 'VmRSS' | 'VmHWM'): number | null {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

const rss = () => status('VmRSS') ?? process.memoryUsage.rss();
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);

async function settle() {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// Warm-up: the same code paths as the measured runs (a few at once), then a settled heap.
{
  const warm = createInMemoryAgentRunStore();
  for (let round = 0; round < 3; round++) {
    await Promise.all(Array.from({ length: 10 }, (_, i) => toolLoop(warm, `warm-${round}-${i}`, STEPS, 'bare')));
  }
}
await settle();
const baselineRss = rss();
let peakMethod: MemoryReport['peakMethod'] = 'VmHWM after clear_refs';
try {
  writeFileSync('/proc/self/clear_refs', '5');
  if (status('VmHWM') === null) throw new Error('no VmHWM');
} catch {
  peakMethod = 'maxRSS since start';
}
// Sampled from inside the saves: the runs resolve one another's promises without ever leaving the
// microtask queue, so a timer would not fire until they all ended.
let sampledPeakRss = baselineRss;
let sampledPeakHeap = 0;
let saves = 0;
const inner = createInMemoryAgentRunStore();
const store: AgentRunStore = {
  load: (runId, options) => inner.load(runId, options),
  save(envelope, options) {
    if (saves++ % SAMPLE_EVERY === 0) {
      const usage = process.memoryUsage();
      sampledPeakRss = Math.max(sampledPeakRss, usage.rss);
      sampledPeakHeap = Math.max(sampledPeakHeap, usage.heapUsed);
    }
    return inner.save(envelope, options);
  },
};

const started = performance.now();
const results = await Promise.all(Array.from({ length: RUNS }, (_, i) => toolLoop(store, `run-${i}`, STEPS, 'bare')));
const seconds = (performance.now() - started) / 1000;
sampledPeakRss = Math.max(sampledPeakRss, rss());
const peakRss = peakMethod === 'VmHWM after clear_refs' ? status('VmHWM')! : process.resourceUsage().maxRSS * 1024;
for (const r of results) if (r.status !== 'completed') throw new Error(`memory: a run ended ${r.status}`);

const heapUsedAtEnd = process.memoryUsage().heapUsed;

// The live history: what the runs hold at the end, as JSON.
let liveHistoryBytes = 0;
let storeJsonBytes = 0;
for (let i = 0; i < RUNS; i++) {
  const envelope = (await store.load(`run-${i}`))!;
  storeJsonBytes += Buffer.byteLength(JSON.stringify(envelope));
  const context = (envelope.snapshot as { context: { messages: unknown[] } }).context;
  liveHistoryBytes += Buffer.byteLength(JSON.stringify(context.messages)) + Buffer.byteLength(JSON.stringify(envelope.receipts));
}

await settle();
const report: MemoryReport = {
  runs: RUNS, steps: STEPS, baselineRss, peakRss, peakMethod, sampledPeakRss, sampledPeakHeap, liveHistoryBytes,
  heapUsedAtEnd, heapUsedAfterGc: process.memoryUsage().heapUsed, storeJsonBytes, seconds,
};
// Held to here, so the collection above measures what a caller keeping the results keeps.
if (results.length !== RUNS) throw new Error('memory: results lost');
process.send!(report, () => process.disconnect());

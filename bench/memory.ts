/**
 * The memory section of `npm run bench` (issue 16): the peak resident size of
 * a process driving 100 runs of 100 steps at once, on the in-memory agent run
 * store (so the figure is the engine's memory, with one JSON copy of each run
 * in the store, and no database driver's), against the process's own size
 * before it started them (after its imports and a warm-up, heap collected):
 * target, at most the baseline plus three times the live history (the JSON
 * bytes of the 100 runs' transcripts and receipts at the end). The process is
 * a child of its own (bench/memory-worker.ts), so nothing the other sections
 * left in this one counts.
 *
 *   npm run bench -- --memory      this section alone (or CAIRN_BENCH=memory)
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { MemoryReport } from './memory-worker.js';

const TARGET_FACTOR = 3;
const WORKER = fileURLToPath(new URL('./memory-worker.ts', import.meta.url));

export function measureMemory(): Promise<MemoryReport> {
  return new Promise((resolve, reject) => {
    const child = fork(WORKER, [], { execArgv: ['--conditions=source', '--import', 'tsx', '--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let report: MemoryReport | undefined;
    child.on('message', (m: MemoryReport) => (report = m));
    child.on('error', reject);
    child.on('exit', (code) => (report ? resolve(report) : reject(new Error(`memory: the worker exited (${code}) without a report`))));
  });
}

export function printMemory(r: MemoryReport): void {
  const mb = (n: number) => (n / 1024 / 1024).toFixed(1);
  const grown = r.peakRss - r.baselineRss;
  const target = r.baselineRss + TARGET_FACTOR * r.liveHistoryBytes;
  console.log(
    `\nMemory: peak resident size of a process driving ${r.runs} runs of ${r.steps} steps at once (in-memory agent run store; ${r.seconds.toFixed(1)} s), ` +
    'against its size before it started them (after imports and a warm-up, heap collected)\n',
  );
  console.log(`| peak RSS MB | baseline RSS MB | growth MB | live history MB (JSON of ${r.runs} transcripts + receipts) | growth / live history | target: baseline + ${TARGET_FACTOR}x live history, MB | |`);
  console.log('| ---: | ---: | ---: | ---: | ---: | ---: | --- |');
  console.log(
    `| ${mb(r.peakRss)} | ${mb(r.baselineRss)} | ${mb(grown)} | ${mb(r.liveHistoryBytes)} | ${(grown / r.liveHistoryBytes).toFixed(2)}x | ` +
    `${mb(target)} | ${r.peakRss <= target ? 'met' : 'NOT met'} |`,
  );
  console.log(
    `\nPeak: ${r.peakMethod} (the sampler, every 20th save, saw ${mb(r.sampledPeakRss)} MB, and at most ${mb(r.sampledPeakHeap)} MB of V8 heap in use). Heap in use when the runs ended: ${mb(r.heapUsedAtEnd)} MB; ` +
    `after a collection, the results still held: ${mb(r.heapUsedAfterGc)} MB. The store's copies (each run's last envelope as JSON): ${mb(r.storeJsonBytes)} MB.`,
  );
}

/**
 * The memory section of `npm run bench` (issue 16): the peak resident size of
 * a process driving 100 runs of 100 steps at once, on the in-memory agent run
 * store (so the figure is the engine's memory, with the store's copy of each
 * run, and no database driver's), against the process's own size before it
 * started them (after its imports and a warm-up, heap collected): target, at
 * most the baseline plus three times the live history (the JSON bytes of the
 * 100 runs' transcripts and receipts at the end). Each process is a child of
 * its own (bench/memory-worker.ts), so nothing the other sections left in
 * this one counts.
 *
 * Beside it, measured in the same run the same way (bench/memory-xstate-worker.ts):
 * the simplest design, a bare XState loop of the same shape keeping its
 * transcript in its context and checkpointing twice a step as a JSON string
 * in a Map. Its growth against its own live history says how near the target
 * any XState design of this shape gets on this machine.
 *
 * Third, Cairn again with V8's old space capped at its baseline heap plus 3x
 * its live history: whether what the runs hold at once fits the target when
 * V8 may not keep garbage beyond it, and what the cap costs in time.
 *
 *   npm run bench -- --memory      this section alone (or CAIRN_BENCH=memory)
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { MemoryReport } from './memory-probe.js';

const TARGET_FACTOR = 3;
const CAIRN = fileURLToPath(new URL('./memory-worker.ts', import.meta.url));
const BARE = fileURLToPath(new URL('./memory-xstate-worker.ts', import.meta.url));

export interface MemoryReports {
  cairn: MemoryReport;
  /** The bare XState loop measured in the same run. */
  bare: MemoryReport;
  /**
   * Cairn again, its old space capped at its baseline heap plus 3x its live history (from the run above): whether
   * what the runs hold at once fits the target when V8 may not keep garbage beyond it. Null when the process ran
   * out of heap under the cap.
   */
  capped: MemoryReport | null;
}

function measureIn(worker: string, flags: string[] = []): Promise<MemoryReport> {
  return new Promise((resolve, reject) => {
    const child = fork(worker, [], { execArgv: ['--conditions=source', '--import', 'tsx', '--expose-gc', ...flags], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let report: MemoryReport | undefined;
    child.on('message', (m: MemoryReport) => (report = m));
    child.on('error', reject);
    child.on('exit', (code) => (report ? resolve(report) : reject(new Error(`memory: ${worker} exited (${code}) without a report`))));
  });
}

/** The cap for the capped run: the baseline heap plus the target's multiple of the live history, in MB. */
export const capOf = (r: MemoryReport): number => Math.ceil((r.baselineHeap + TARGET_FACTOR * r.liveHistoryBytes) / 1024 / 1024);

/** One process after the other, never two at once: the bare loop, Cairn, then Cairn under a heap cap. */
export async function measureMemory(): Promise<MemoryReports> {
  const bare = await measureIn(BARE);
  const cairn = await measureIn(CAIRN);
  const capped = await measureIn(CAIRN, [`--max-old-space-size=${capOf(cairn)}`]).catch(() => null);
  return { cairn, bare, capped };
}

export function printMemory({ cairn, bare, capped }: MemoryReports): void {
  const mb = (n: number) => (n / 1024 / 1024).toFixed(1);
  const grown = (r: MemoryReport) => r.peakRss - r.baselineRss;
  const perLive = (r: MemoryReport) => grown(r) / r.liveHistoryBytes;
  const target = cairn.baselineRss + TARGET_FACTOR * cairn.liveHistoryBytes;
  console.log(
    `\nMemory: peak resident size of a process driving ${cairn.runs} runs of ${cairn.steps} steps at once, ` +
    'against its size before it started them (after imports and a warm-up, heap collected); each in a process of its own, one after the other\n',
  );
  console.log(`| | peak RSS MB | baseline RSS MB | growth MB | live history MB | growth / live history | target: baseline + ${TARGET_FACTOR}x live history, MB | |`);
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
  console.log(
    `| Cairn, in-memory agent run store (live history: JSON of ${cairn.runs} transcripts + receipts; ${cairn.seconds.toFixed(1)} s) | ` +
    `${mb(cairn.peakRss)} | ${mb(cairn.baselineRss)} | ${mb(grown(cairn))} | ${mb(cairn.liveHistoryBytes)} | ${perLive(cairn).toFixed(2)}x | ` +
    `${mb(target)} | ${cairn.peakRss <= target ? 'met' : 'NOT met'} |`,
  );
  console.log(
    `| baseline: bare XState loop, transcript in context, 2 checkpoints a step as JSON in a Map (live history: JSON of ${bare.runs} transcripts; ${bare.seconds.toFixed(1)} s) | ` +
    `${mb(bare.peakRss)} | ${mb(bare.baselineRss)} | ${mb(grown(bare))} | ${mb(bare.liveHistoryBytes)} | ${perLive(bare).toFixed(2)}x | ` +
    `${mb(bare.baselineRss + TARGET_FACTOR * bare.liveHistoryBytes)} | ${bare.peakRss <= bare.baselineRss + TARGET_FACTOR * bare.liveHistoryBytes ? 'met' : 'not met'} |`,
  );
  if (capped) {
    const cappedTarget = capped.baselineRss + TARGET_FACTOR * capped.liveHistoryBytes;
    console.log(
      `| Cairn again, V8's old space capped at ${capped.oldSpaceCapMb} MB (the baseline heap ${mb(cairn.baselineHeap)} MB + ${TARGET_FACTOR}x live history; ` +
      `${capped.seconds.toFixed(1)} s, ${(capped.seconds / cairn.seconds).toFixed(2)}x the uncapped time) | ` +
      `${mb(capped.peakRss)} | ${mb(capped.baselineRss)} | ${mb(grown(capped))} | ${mb(capped.liveHistoryBytes)} | ${perLive(capped).toFixed(2)}x | ` +
      `${mb(cappedTarget)} | ${capped.peakRss <= cappedTarget ? 'met under the cap' : 'not met under the cap'} |`,
    );
  } else {
    console.log(`| Cairn again, V8's old space capped at ${capOf(cairn)} MB | ran out of heap under the cap | | | | | | |`);
  }
  console.log(
    '\nThe capped run says what the runs hold at once: V8 sizes its old space at a multiple of what it found live at its last ' +
    'full collection (the code and modules of the baseline included), and collects when it fills, so the uncapped peak is mostly ' +
    'garbage it had no reason yet to collect; a cap makes it collect sooner, paid in time.',
  );
  console.log(
    `\nCairn's growth per byte of live history: ${(perLive(cairn) / perLive(bare)).toFixed(2)}x the bare loop's ` +
    `(growth ${(grown(cairn) / grown(bare)).toFixed(2)}x the bare loop's, for ${(cairn.liveHistoryBytes / bare.liveHistoryBytes).toFixed(2)}x its live history).`,
  );
  console.log(
    `Cairn's live history is JSON text: each tool result is in it three times (its tool message, its receipt's rawResult ` +
    `and modelOutput; one string in memory). Its transcripts alone are ${mb(cairn.transcriptBytes)} MB; growth against them ` +
    `${(grown(cairn) / cairn.transcriptBytes).toFixed(2)}x. What the runs retain, without garbage: bench/memory-retained.ts.`,
  );
  for (const [name, r] of [['Cairn', cairn], ['Bare loop', bare]] as const) {
    console.log(
      `${name}: peak by ${r.peakMethod} (the sampler saw ${mb(r.sampledPeakRss)} MB, and at most ${mb(r.sampledPeakHeap)} MB of V8 heap in use). ` +
      `Heap in use when the runs ended: ${mb(r.heapUsedAtEnd)} MB; after a collection, the results still held: ${mb(r.heapUsedAfterGc)} MB. ` +
      `The store's copies (each run's last ${name === 'Cairn' ? 'envelope' : 'checkpoint'}, as JSON): ${mb(r.storeJsonBytes)} MB.`,
    );
  }
}

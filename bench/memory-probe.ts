/**
 * What the memory workers (bench/memory-worker.ts, bench/memory-xstate-worker.ts)
 * measure with, so both read the same figures the same way: the resident
 * size, a settled heap, and the kernel's peak from a reset on.
 *
 * The peak is VmHWM of /proc/self/status, reset to the current size by
 * writing 5 to /proc/self/clear_refs (Linux 4.0+); where that is refused,
 * process.resourceUsage().maxRSS (the peak since the process started, the
 * warm-up included).
 */
import { readFileSync, writeFileSync } from 'node:fs';

export type PeakMethod = 'VmHWM after clear_refs' | 'maxRSS since start';

/** What a memory worker sends back over its IPC channel. */
export interface MemoryReport {
  runs: number;
  steps: number;
  baselineRss: number;
  /** The V8 heap in use at the baseline (after the warm-up, collected). */
  baselineHeap: number;
  /** The old-space cap the process ran under (`--max-old-space-size`, MB), or null for V8's own sizing. */
  oldSpaceCapMb: number | null;
  peakRss: number;
  peakMethod: PeakMethod;
  sampledPeakRss: number;
  /** The largest V8 heap in use the sampler saw. */
  sampledPeakHeap: number;
  /** The JSON bytes of what the runs hold at the end (their transcripts, and Cairn's receipts). */
  liveHistoryBytes: number;
  /** The JSON bytes of the transcripts alone (each tool result once; Cairn's receipts hold it twice more). */
  transcriptBytes: number;
  heapUsedAtEnd: number;
  /** After the runs, a collection: what stays (the store's copies, the results). */
  heapUsedAfterGc: number;
  /** The JSON bytes of what the store holds: each run's last envelope (Cairn) or checkpoint (the baseline). */
  storeJsonBytes: number;
  seconds: number;
}

/** A field of /proc/self/status in bytes (its values are in kB), or null off Linux. */
function status(field: 'VmRSS' | 'VmHWM'): number | null {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

export const rss = (): number => status('VmRSS') ?? process.memoryUsage.rss();
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);

/** Three collections with a turn of the event loop after each (the worker runs with --expose-gc). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Resets the kernel's peak to the current size; returns how {@link peakRss} will read it. */
export function resetPeak(): PeakMethod {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    if (status('VmHWM') === null) throw new Error('no VmHWM');
    return 'VmHWM after clear_refs';
  } catch {
    return 'maxRSS since start';
  }
}

export function peakRss(method: PeakMethod): number {
  return method === 'VmHWM after clear_refs' ? status('VmHWM')! : process.resourceUsage().maxRSS * 1024;
}

/**
 * A sampler of the resident size and the V8 heap in use, called from inside
 * the work (every `every`th call samples): the runs resolve one another's
 * promises without leaving the microtask queue, so a timer would not fire
 * until they all ended.
 */
export function sampler(every: number, baselineRss: number) {
  let calls = 0;
  const seen = { rss: baselineRss, heap: 0 };
  return {
    seen,
    tick(): void {
      if (calls++ % every !== 0) return;
      const usage = process.memoryUsage();
      seen.rss = Math.max(seen.rss, usage.rss);
      seen.heap = Math.max(seen.heap, usage.heapUsed);
    },
  };
}

/** The old-space cap this process was started with, from its execArgv, or null. */
export function oldSpaceCap(): number | null {
  const flag = process.execArgv.find((a) => a.startsWith('--max-old-space-size='));
  return flag ? Number(flag.split('=')[1]) : null;
}

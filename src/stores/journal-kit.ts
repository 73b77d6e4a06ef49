/**
 * What the SQLite and PostgreSQL journals share beyond the contract's own
 * checks (`checkAppend`, `readLimit`): the checks of what a text column can
 * hold, of the other methods' arguments, and the retention an ops store
 * applies on its own.
 */
import { InvalidOptionsError } from '../errors/index.js';

/** How long an ops store keeps a stream after its last frame, unless told otherwise: one day. */
export const DEFAULT_JOURNAL_RETENTION_MS = 86_400_000;

/** The longest pause between two retention sweeps of one store object (a shorter retention sweeps as often as it lasts). */
const SWEEP_INTERVAL_MS = 60_000;

/** Checks a `journalRetentionMs` option and applies the default. */
export function journalRetention(value: unknown, who: string): number {
  if (value === undefined) return DEFAULT_JOURNAL_RETENTION_MS;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new InvalidOptionsError(`${who}: journalRetentionMs must be a finite number of milliseconds above 0.`);
  }
  return value;
}

// The argument checks every journal makes live beside the contract, where the in-memory journal reads them too.
export { appendScope, checkStorableBodies, checkStreamId, pruneBefore, readAfter } from '../ui/journal.js';

/**
 * When the next retention sweep is due, on a store object's clock: at the
 * first append, then at most every minute (or every `retentionMs`, when that
 * is shorter). A stream therefore goes between `retentionMs` and
 * `retentionMs` plus that interval after its last frame, as long as frames
 * are appended somewhere on the store.
 */
export function sweepSchedule(retentionMs: number, clock: { now(): number }): { due(): boolean } {
  const interval = Math.min(retentionMs, SWEEP_INTERVAL_MS);
  let next = -Infinity;
  return {
    due() {
      const now = clock.now();
      if (now < next) return false;
      next = now + interval;
      return true;
    },
  };
}

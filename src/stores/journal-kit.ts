/**
 * What the SQLite and PostgreSQL journals share beyond the contract's own
 * checks (`checkAppend`, `readLimit`): the checks of what a text column can
 * hold, of the other methods' arguments, and the retention an ops store
 * applies on its own.
 */
import { InvalidOptionsError } from '../errors/index.js';
import type { JournalFrame } from '../ui/journal.js';

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

// A raw NUL, or half of a surrogate pair: neither occurs in JSON.stringify's output, and neither survives a UTF-8 text column.
const UNSTORABLE = /[\0\p{Cs}]/u;

/**
 * Refuses frames whose body a UTF-8 text column would change: a NUL
 * (PostgreSQL refuses it) or a lone surrogate (written as U+FFFD). A frame is
 * JSON text, which never holds either unescaped.
 */
export function checkStorableBodies(frames: readonly JournalFrame[]): void {
  frames.forEach((frame, i) => {
    if (UNSTORABLE.test(frame.body)) {
      throw new InvalidOptionsError(`journal: frame ${i} (seq ${frame.seq}) holds a NUL or a lone surrogate, which no JSON text holds unescaped.`);
    }
  });
}

/** The stream id of a head or read, checked: a string (an append refuses '' too, so no stream has that id). */
export function checkStreamId(streamId: unknown): asserts streamId is string {
  if (typeof streamId !== 'string') throw new InvalidOptionsError('journal: streamId must be a string.');
}

/** The scope of an append, checked: a string when given. */
export function appendScope(options: { scope?: string } | undefined): string | null {
  const scope = options?.scope;
  if (scope === undefined) return null;
  if (typeof scope !== 'string') throw new InvalidOptionsError('journal: scope must be a string when given.');
  return scope;
}

/** The `after` of a read, checked: an integer of 0 or more. */
export function readAfter(after: unknown): number {
  if (typeof after !== 'number' || !Number.isSafeInteger(after) || after < 0) {
    throw new InvalidOptionsError('journal: after must be an integer of 0 or more.');
  }
  return after;
}

/** The `before` of a prune, checked: a number of ms (Infinity prunes every stream). */
export function pruneBefore(options: { before: number } | undefined): number {
  const before = options?.before;
  if (typeof before !== 'number' || Number.isNaN(before)) throw new InvalidOptionsError('journal: prune needs { before } in ms.');
  return before;
}

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

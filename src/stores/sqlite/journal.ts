/**
 * The SQLite AgentStreamJournal: a `cairn_journal_streams` row per stream
 * (last seq, whether it ended its leg, scope, `updated_at` on the store's
 * clock) and a `cairn_journal_frames` row per frame, keyed (stream_id, seq).
 *
 * An append is one IMMEDIATE transaction: the write lock is taken before the
 * head is read, so the head check and the insert are one step that no other
 * connection on the file can come between. Of two appends on the same
 * `after`, the second finds the head moved and writes nothing.
 */
import type Database from 'better-sqlite3';
import { CairnTypeError } from '../../errors/index.js';
import { checkAppend, JournalConflictError, readLimit, type AgentStreamJournal, type JournalFrame, type JournalHead } from '../../ui/journal.js';
import {
  appendScope, checkStorableBodies, checkStreamId, pruneBefore, readAfter, sweepSchedule,
} from '../journal-kit.js';

/** Streams deleted per prune transaction, so a large prune never holds the write lock for long. */
const PRUNE_BATCH = 200;

interface StreamRow {
  last_seq: number;
  ended: number;
  scope: string | null;
  updated_at: number;
}

interface FrameRow {
  seq: number;
  body: string;
  ends_leg: number;
}

export interface SqliteJournalOptions {
  clock: { now(): number };
  /** Streams whose last frame is older are swept on a later append. */
  retentionMs: number;
  /** A read-only connection: no sweep (every write is refused by SQLite). */
  readonly: boolean;
}

/** @internal Takes or gives a better-sqlite3 handle, whose types stay out of the published declarations (a user need not install @types/better-sqlite3). */
export function createSqliteJournal(db: Database.Database, options: SqliteJournalOptions): AgentStreamJournal {
  const { clock, retentionMs } = options;
  const statements = {
    head: db.prepare<[string], StreamRow>('SELECT last_seq, ended, scope, updated_at FROM cairn_journal_streams WHERE stream_id = ?'),
    create: db.prepare<[string, string | null, number, number, number]>(
      'INSERT INTO cairn_journal_streams (stream_id, scope, last_seq, ended, updated_at) VALUES (?, ?, ?, ?, ?)'),
    advance: db.prepare<[number, number, number, string]>(
      'UPDATE cairn_journal_streams SET last_seq = ?, ended = ?, updated_at = ? WHERE stream_id = ?'),
    frame: db.prepare<[string, number, string, number]>(
      'INSERT INTO cairn_journal_frames (stream_id, seq, body, ends_leg) VALUES (?, ?, ?, ?)'),
    read: db.prepare<[string, number, number], FrameRow>(
      'SELECT seq, body, ends_leg FROM cairn_journal_frames WHERE stream_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
    expired: db.prepare<[number, number], string>(
      'SELECT stream_id FROM cairn_journal_streams WHERE updated_at < ? LIMIT ?').pluck(),
    deleteFrames: db.prepare<[string]>('DELETE FROM cairn_journal_frames WHERE stream_id = ?'),
    deleteStream: db.prepare<[string]>('DELETE FROM cairn_journal_streams WHERE stream_id = ?'),
  };

  const appendTx = db.transaction((streamId: string, after: number, frames: readonly JournalFrame[], scope: string | null) => {
    const row = statements.head.get(streamId);
    const found = row ? row.last_seq : null;
    if ((found ?? 0) !== after) throw new JournalConflictError(streamId, after, found);
    if (row && row.scope !== scope) throw new JournalConflictError(streamId, after, found, `Stream "${streamId}" belongs to another scope.`);
    const last = frames[frames.length - 1]!;
    const now = clock.now();
    if (row) statements.advance.run(last.seq, last.end ? 1 : 0, now, streamId);
    else statements.create.run(streamId, scope, last.seq, last.end ? 1 : 0, now);
    for (const frame of frames) statements.frame.run(streamId, frame.seq, frame.body, frame.end ? 1 : 0);
  });

  // Frames are deleted by hand as well as by the cascade: a connection opened without foreign_keys would leave them.
  const pruneBatch = db.transaction((before: number): number => {
    const ids = statements.expired.all(before, PRUNE_BATCH);
    for (const id of ids) {
      statements.deleteFrames.run(id);
      statements.deleteStream.run(id);
    }
    return ids.length;
  });

  const prune = (before: number): number => {
    let total = 0;
    for (;;) {
      const deleted = pruneBatch.immediate(before);
      total += deleted;
      if (deleted < PRUNE_BATCH) return total;
    }
  };

  const sweep = sweepSchedule(retentionMs, clock);

  return {
    async head(streamId): Promise<JournalHead | undefined> {
      checkStreamId(streamId);
      const row = statements.head.get(streamId);
      if (!row) return undefined;
      return { seq: row.last_seq, ended: row.ended === 1, scope: row.scope, updatedAt: row.updated_at };
    },

    async append(streamId, after, frames, appendOptions) {
      checkAppend(streamId, after, frames);
      checkStorableBodies(frames);
      const scope = appendScope(appendOptions);
      appendTx.immediate(streamId, after, frames, scope);
      if (!options.readonly && sweep.due()) {
        // Housekeeping after the append committed: a sweep that fails (a busy file) must not fail the append; the next one retries.
        try {
          prune(clock.now() - retentionMs);
        } catch {
          // ignored on purpose, see above
        }
      }
    },

    async read(streamId, after, limit) {
      checkStreamId(streamId);
      const from = readAfter(after);
      const max = readLimit(limit);
      return statements.read.all(streamId, from, max).map((row) => ({ seq: row.seq, body: row.body, end: row.ends_leg === 1 }));
    },

    async prune(pruneOptions) {
      return prune(pruneBefore(pruneOptions));
    },
  };
}

/**
 * The journal of a store opened read-only on a file older than the journal's
 * migration: it has no streams, and refuses writes as the store does.
 */
export const EMPTY_READ_ONLY_JOURNAL: AgentStreamJournal = {
  async head(streamId) {
    checkStreamId(streamId);
    return undefined;
  },
  async append() {
    throw new CairnTypeError('invalid_options', 'The ops store was opened read-only: it cannot append to the journal.');
  },
  async read(streamId, after, limit) {
    checkStreamId(streamId);
    readAfter(after);
    readLimit(limit);
    return [];
  },
  async prune() {
    throw new CairnTypeError('invalid_options', 'The ops store was opened read-only: it cannot prune the journal.');
  },
};

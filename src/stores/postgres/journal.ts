/**
 * The PostgreSQL AgentStreamJournal: a `cairn_journal_streams` row per stream
 * (last seq, whether it ended its leg, scope, `updated_at` in ms on the
 * database clock) and a `cairn_journal_frames` row per frame, keyed
 * (stream_id, seq).
 *
 * An append is one statement, so one round trip and atomic on its own: a CTE
 * moves the stream row on (an `UPDATE ... WHERE last_seq = after`, or for a
 * new stream an `INSERT ... ON CONFLICT DO NOTHING`) and inserts the frames
 * only for a row it moved. Under READ COMMITTED a concurrent append on the
 * same `after` waits for the row (or the key) and then finds the head moved,
 * so it moves nothing and inserts nothing; the frames' primary key would
 * refuse a second copy of a seq regardless.
 */
import { checkAppend, JournalConflictError, readLimit, type AgentStreamJournal, type JournalHead } from '../../ui/journal.js';
import {
  appendScope, checkStorableBodies, checkStreamId, pruneBefore, readAfter, sweepSchedule,
} from '../journal-kit.js';
import type { OpsTables } from './migrations.js';
import { statementName, type Db } from './sql.js';

interface StreamRow {
  last_seq: number;
  ended: boolean;
  scope: string | null;
  updated_at: number;
}

interface FrameRow {
  seq: number;
  body: string;
  ends_leg: boolean;
}

/** The database clock in whole ms, as `updated_at` holds it. */
const NOW_MS = 'floor(extract(epoch FROM now()) * 1000)::float8';

export function createPostgresJournal(db: Db, t: OpsTables, retentionMs: number): AgentStreamJournal {
  // bigint comes back from pg as a string; float8 holds every safe integer exactly.
  const head = `SELECT last_seq::float8 AS last_seq, ended, scope, updated_at FROM ${t.journalStreams} WHERE stream_id = $1`;
  // $1 stream, $2 scope, $3 seqs, $4 bodies, $5 end flags, $6 the new last seq, $7 its end flag.
  const frames = `INSERT INTO ${t.journalFrames} (stream_id, seq, body, ends_leg)
  SELECT moved.stream_id, f.seq, f.body, f.ends_leg
  FROM moved, unnest($3::bigint[], $4::text[], $5::boolean[]) AS f (seq, body, ends_leg)`;
  const create = `WITH moved AS (
  INSERT INTO ${t.journalStreams} (stream_id, scope, last_seq, ended, updated_at)
  VALUES ($1, $2, $6, $7, ${NOW_MS})
  ON CONFLICT (stream_id) DO NOTHING
  RETURNING stream_id
), written AS (${frames})
SELECT count(*)::int AS moved FROM moved`;
  // $8 the seq the writer read.
  const advance = `WITH moved AS (
  UPDATE ${t.journalStreams} SET last_seq = $6, ended = $7, updated_at = ${NOW_MS}
  WHERE stream_id = $1 AND last_seq = $8 AND scope IS NOT DISTINCT FROM $2
  RETURNING stream_id
), written AS (${frames})
SELECT count(*)::int AS moved FROM moved`;
  const read = `SELECT seq::float8 AS seq, body, ends_leg FROM ${t.journalFrames}
WHERE stream_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`;
  // The frames go with their stream (ON DELETE CASCADE).
  const prune = `WITH gone AS (DELETE FROM ${t.journalStreams} WHERE updated_at < $1 RETURNING 1) SELECT count(*)::int AS gone FROM gone`;
  const sweep = `DELETE FROM ${t.journalStreams} WHERE updated_at < ${NOW_MS} - $1`;
  const names = {
    head: statementName(head), create: statementName(create), advance: statementName(advance), read: statementName(read),
  };
  // The sweep is timed on this process's clock; which streams it deletes is decided on the database's.
  const schedule = sweepSchedule(retentionMs, { now: () => Date.now() });

  const readHead = async (streamId: string): Promise<StreamRow | undefined> =>
    (await db.query<StreamRow>(`Reading journal stream ${streamId}`, head, [streamId], false, names.head))[0];

  return {
    async head(streamId): Promise<JournalHead | undefined> {
      checkStreamId(streamId);
      const row = await readHead(streamId);
      if (!row) return undefined;
      return { seq: row.last_seq, ended: row.ended, scope: row.scope, updatedAt: row.updated_at };
    },

    async append(streamId, after, batch, appendOptions) {
      checkAppend(streamId, after, batch);
      checkStorableBodies(batch);
      const scope = appendScope(appendOptions);
      const last = batch[batch.length - 1]!;
      const values: unknown[] = [
        streamId, scope, batch.map((f) => f.seq), batch.map((f) => f.body), batch.map((f) => f.end), last.seq, last.end,
      ];
      const what = `Appending to journal stream ${streamId}`;
      const [row] = after === 0
        ? await db.query<{ moved: number }>(what, create, values, true, names.create)
        : await db.query<{ moved: number }>(what, advance, [...values, after], true, names.advance);
      if (row?.moved !== 1) {
        // Nothing was written. What the stream holds now says why (it may have moved again since: the error says so either way).
        const now = await readHead(streamId);
        const found = now ? now.last_seq : null;
        if ((found ?? 0) === after && now && now.scope !== scope) {
          throw new JournalConflictError(streamId, after, found, `Stream "${streamId}" belongs to another scope.`);
        }
        throw new JournalConflictError(streamId, after, found);
      }
      if (schedule.due()) {
        // Housekeeping after the append: a sweep that fails must not fail the append; the next one retries.
        await db.query('Sweeping the journal', sweep, [retentionMs], true).catch(() => undefined);
      }
    },

    async read(streamId, after, limit) {
      checkStreamId(streamId);
      const from = readAfter(after);
      const max = readLimit(limit);
      const rows = await db.query<FrameRow>(`Reading journal stream ${streamId}`, read, [streamId, from, max], false, names.read);
      return rows.map((row) => ({ seq: row.seq, body: row.body, end: row.ends_leg }));
    },

    async prune(options) {
      const before = pruneBefore(options);
      const [row] = await db.query<{ gone: number }>('Pruning the journal', prune, [before], true);
      return row?.gone ?? 0;
    },
  };
}

/**
 * The statements of the SQLite AgentRunStore (agent-runs.ts): the reads of a
 * load on a file of schema 8 or later (a run's rows as one range of keys, see
 * run-rows.ts) and on an older file opened read-only (by run id); the
 * statements of a save stay beside the save (agent-runs.ts).
 */
import type Database from 'better-sqlite3';
import { StoredRecordError } from '../../errors/index.js';
import type { StoredRows } from '../write-plan.js';
import { runEnd, runStart } from './run-rows.js';

/** What a load reads a run with: its head row, then its transcript and receipt rows.
 * @internal Takes or gives better-sqlite3 types, which stay out of the published declarations (a user need not install @types/better-sqlite3). */
export interface RunReads {
  head: Database.Statement<[string], HeadRow & { head: unknown }>;
  /** The run's rows as readRecord takes them; refuses a row in the run's range that is filed under another run id. */
  rows(runId: string, runNo: number, saves: boolean): { messages: MessageRow[]; receipts: ReceiptRow[] };
}

/** @internal A head row as a save or a load reads it. */
export interface HeadRow {
  run_no: number;
  scope: string;
  status: string;
  revision: number;
  transcript_digest: unknown;
  receipts_digest: unknown;
}

/** The rows as readRecord takes them (see ../write-plan.ts). */
type MessageRow = StoredRows['messages'][number];
type ReceiptRow = StoredRows['receipts'][number];

/**
 * A row as the statements below return it (better-sqlite3's raw mode: an array, not an object with named keys,
 * which costs the driver more for each row): the row's index or key, its body, whether it is filed under another
 * run id (1) or not (0) or, for a read by run id, nothing, and the revision that wrote it when asked for.
 */
type RawRow = [id: unknown, body: unknown, foreign: unknown, revision?: unknown];

/** @internal A BLOB column as bytes; anything else (a TEXT or NULL put there by hand) reads as no bytes, which the codec refuses. */
export const bytesOf = (value: unknown): Uint8Array => (value instanceof Uint8Array ? value : new Uint8Array(0));

/** The rows of one table as readRecord takes them, in one pass that also refuses another run's rows. */
function rowsOf<R>(runId: string, raw: RawRow[], saves: boolean, make: (id: unknown, bytes: Uint8Array, revision: number | null | undefined) => R): R[] {
  const out = new Array<R>(raw.length);
  for (let i = 0; i < raw.length; i++) {
    const row = raw[i]!;
    // A row in the run's range filed under another run id was put there by hand: the rows are not the run's.
    if (row[2] === 1) throw new StoredRecordError('record_corrupt', runId, `Stored rows of run ${runId} do not match its head.`);
    out[i] = make(row[0], bytesOf(row[1]), saves ? (row[3] as number | null | undefined) ?? null : undefined);
  }
  return out;
}

const messageRow = (id: unknown, bytes: Uint8Array, revision: number | null | undefined): MessageRow => ({ index: id as number, bytes, revision });
const receiptRow = (id: unknown, bytes: Uint8Array, revision: number | null | undefined): ReceiptRow => ({ key: id as string, bytes, revision });

/** The statements a load reads a run with, on a file of schema 8 or later: each table's rows as one range of keys.
 * @internal Takes or gives better-sqlite3 types, which stay out of the published declarations (a user need not install @types/better-sqlite3). */
export function keyedReads(db: Database.Database): RunReads {
  // The run id is compared in the statement: a flag per row instead of a string the driver makes for each.
  const range = (columns: string, table: string) => db.prepare(
    `SELECT ${columns} FROM ${table} WHERE row_key >= ? AND row_key < ? ORDER BY row_key`).raw(true) as Database.Statement<[string, bigint, bigint], RawRow>;
  const plain = {
    messages: range('idx, body, run_id IS NOT ?', 'cairn_run_messages'),
    receipts: range('receipt_key, body, run_id IS NOT ?', 'cairn_run_receipts'),
  };
  /** With the revision that wrote each row, for `load(runId, { saves: true })`; null when the rows have no revision column. */
  let withSaves: typeof plain | null | undefined;
  const rowsWithSaves = () => {
    if (withSaves !== undefined) return withSaves;
    try {
      withSaves = {
        messages: range('idx, body, run_id IS NOT ?, revision', 'cairn_run_messages'),
        receipts: range('receipt_key, body, run_id IS NOT ?, revision', 'cairn_run_receipts'),
      };
    } catch {
      withSaves = null;
    }
    return withSaves;
  };
  const joined = joinedReads(db);
  return {
    head: db.prepare<[string], HeadRow & { head: unknown }>(
      'SELECT run_no, scope, status, revision, transcript_digest, receipts_digest, head FROM cairn_runs WHERE run_id = ?'),
    rows(runId: string, runNo: number, saves: boolean) {
      const from = runStart(runNo);
      const to = runEnd(runNo);
      if (!saves && joined) {
        // A transcript's rows are its indexes in order: any other ids are read row by row, whose read tells which.
        const messages = joinedRows(runId, joined.messages.get(runId, from, to), messageRow, (ids) => ids.every((id, i) => id === i));
        const receipts = messages && joinedRows(runId, joined.receipts.get(runId, from, to), receiptRow);
        if (messages && receipts) return { messages, receipts };
      }
      const rows = (saves ? rowsWithSaves() : null) ?? plain;
      return {
        messages: rowsOf(runId, rows.messages.all(runId, from, to), saves, messageRow),
        receipts: rowsOf(runId, rows.receipts.all(runId, from, to), saves, receiptRow),
      };
    },
  };
}

/**
 * A table's rows of a run as one row: how many, whether one is filed under another run id, whether a body is no
 * BLOB, the rows' indexes or keys and their bodies' lengths (as JSON arrays), and the bodies one after the other,
 * in key order. The driver then makes one Buffer for the run's bodies instead of one for each row (each with a
 * backing store of its own) and an array for each row: a 1,000-step run's 3,000 rows read in about a third of
 * the time.
 */
type JoinedRow = [count: number, foreign: number | null, notBlob: number | null, ids: string, lengths: string, bodies: unknown];

/** The joined reads, or null where this SQLite cannot prepare them. */
function joinedReads(db: Database.Database) {
  // The rows come from a subquery in key order (a walk of the table's b-tree along the range: nothing is sorted), which
  // SQLite does not flatten into an aggregate, and every aggregate takes each row as it comes: each id beside its
  // own length and bytes. (ORDER BY inside each aggregate would sort the rows once for each of them.)
  const joined = (id: string, table: string) => db.prepare(`SELECT count(*), max(foreign_row), max(typeof(body) <> 'blob'),
  json_group_array(id), json_group_array(length(body)), CAST(group_concat(body, x'') AS BLOB)
FROM (SELECT ${id} AS id, body, run_id IS NOT ? AS foreign_row FROM ${table} WHERE row_key >= ? AND row_key < ? ORDER BY row_key)`)
    .raw(true) as Database.Statement<[string, bigint, bigint], JoinedRow>;
  try {
    return { messages: joined('idx', 'cairn_run_messages'), receipts: joined('receipt_key', 'cairn_run_receipts') };
  } catch {
    return null;
  }
}

/**
 * The rows of one {@link JoinedRow}, each body a view of the joined bytes; null (the rows are read one by one then)
 * when a body is no BLOB (which reads as no bytes there), the lengths do not add up or `idsFit` refuses the ids.
 * Refuses another run's rows, as {@link rowsOf}.
 */
function joinedRows<R>(
  runId: string, row: JoinedRow | undefined, make: (id: unknown, bytes: Uint8Array, revision: undefined) => R, idsFit?: (ids: unknown[]) => boolean,
): R[] | null {
  if (!row || row[0] === 0) return [];
  if (row[1] === 1) throw new StoredRecordError('record_corrupt', runId, `Stored rows of run ${runId} do not match its head.`);
  const ids = JSON.parse(row[3]) as unknown[];
  const lengths = JSON.parse(row[4]) as unknown[];
  const bodies = row[5];
  if (row[2] !== 0 || !(bodies instanceof Uint8Array) || ids.length !== row[0] || lengths.length !== row[0]) return null;
  if (idsFit && !idsFit(ids)) return null;
  const out = new Array<R>(row[0]);
  let at = 0;
  for (let i = 0; i < out.length; i++) {
    const length = lengths[i] as number;
    out[i] = make(ids[i], bodies.subarray(at, at + length), undefined);
    at += length;
  }
  return at === bodies.length ? out : null;
}

/** The statements a load reads a run with on a file an older Cairn left (opened read-only, so not migrated): by run id.
 * @internal Takes or gives better-sqlite3 types, which stay out of the published declarations (a user need not install @types/better-sqlite3). */
export function legacyReads(db: Database.Database): RunReads {
  const byRun = (sql: string) => db.prepare(sql).raw(true) as Database.Statement<[string], RawRow>;
  const plain = {
    messages: byRun('SELECT idx, body, 0 FROM cairn_run_messages WHERE run_id = ? ORDER BY idx'),
    receipts: byRun('SELECT receipt_key, body, 0 FROM cairn_run_receipts WHERE run_id = ? ORDER BY receipt_key'),
  };
  // Before migration 5 the rows have no revision column: they read as unknown.
  let withSaves: typeof plain | null | undefined;
  const rowsWithSaves = () => {
    if (withSaves !== undefined) return withSaves;
    try {
      withSaves = {
        messages: byRun('SELECT idx, body, 0, revision FROM cairn_run_messages WHERE run_id = ? ORDER BY idx'),
        receipts: byRun('SELECT receipt_key, body, 0, revision FROM cairn_run_receipts WHERE run_id = ? ORDER BY receipt_key'),
      };
    } catch {
      withSaves = null;
    }
    return withSaves;
  };
  return {
    head: db.prepare<[string], HeadRow & { head: unknown }>(
      'SELECT 0 AS run_no, scope, status, revision, transcript_digest, receipts_digest, head FROM cairn_runs WHERE run_id = ?'),
    rows(runId: string, _runNo: number, saves: boolean) {
      const rows = (saves ? rowsWithSaves() : null) ?? plain;
      return {
        messages: rowsOf(runId, rows.messages.all(runId), saves, messageRow),
        receipts: rowsOf(runId, rows.receipts.all(runId), saves, receiptRow),
      };
    },
  };
}

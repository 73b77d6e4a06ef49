/**
 * The statements of the SQLite AgentRunStore's saves and prunes (agent-runs.ts), on a file of schema 8 or later:
 * a run's head row, and its transcript and receipt rows in its range of keys (see run-rows.ts).
 */
import type Database from 'better-sqlite3';
import type { HeadRow } from './run-statements.js';

type S<P extends unknown[], R = unknown> = Database.Statement<P, R>;
type Digest = Uint8Array;

/** @internal The statements of {@link keyedWrites}, with the file's page size. */
export interface RunWrites {
  pageSize: number;
  head: S<[string], HeadRow & { padded: number | null; pad: number | null }>;
  headBytes: S<[string], unknown>;
  openReceipts: S<[bigint, bigint, number], { receipt_key: string; body: unknown }>;
  upsertHead: S<[string, string, string, number, string | null, number, number, number, number, number, Digest, Digest, Uint8Array]>;
  updateRunning: S<[number, string | null, number, number, number, number, number, Digest, Digest, Uint8Array, string]>;
  updateGuarded: S<[number, string | null, number, number, number, number, number, Digest, Digest, Uint8Array,
    number, string, string, number, Digest, Digest, number]>;
  trimMessages: S<[bigint, bigint]>;
  putMessage: S<[bigint, string, number, Uint8Array, number]>;
  deleteRunMessages: S<[bigint, bigint]>;
  deleteRunReceipts: S<[bigint, bigint]>;
  deleteReceipt: S<[bigint, bigint, string]>;
  updateReceipt: S<[number, Uint8Array, number, bigint, bigint, string]>;
  appendReceipt: S<[bigint, bigint, bigint, string, string, number, Uint8Array, number]>;
  insertReceipt: S<[bigint, string, string, number, Uint8Array, number]>;
  deleteRun: S<[number]>;
}

/** The statements of a save and of a prune (schema 8 on).
 * @internal Takes or gives better-sqlite3 types, which stay out of the published declarations (a user need not install @types/better-sqlite3). */
export function keyedWrites(db: Database.Database, pageSize: number): RunWrites {
  return {
    pageSize,
    head: db.prepare<[string], HeadRow & { padded: number | null; pad: number | null }>(`SELECT run_no, scope, status, revision,
  transcript_digest, receipts_digest, length(head) + length(pad) AS padded, length(pad) AS pad FROM cairn_runs WHERE run_id = ?`),
    headBytes: db.prepare<[string], unknown>('SELECT head FROM cairn_runs WHERE run_id = ?').pluck(),
    openReceipts: db.prepare<[bigint, bigint, number], { receipt_key: string; body: unknown }>(
      'SELECT receipt_key, body FROM cairn_run_receipts WHERE row_key >= ? AND row_key < ? AND model_step >= ?'),
    upsertHead: db.prepare<[string, string, string, number, string | null, number, number, number, number, number, Uint8Array, Uint8Array, Uint8Array]>(
      `INSERT INTO cairn_runs (run_id, scope, status, revision, binding_id, created_at, updated_at,
    pending_approvals, pending_client_calls, transcript_length, transcript_digest, receipts_digest, head, pad)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, zeroblob(0))
  ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, revision = excluded.revision,
    binding_id = excluded.binding_id, created_at = excluded.created_at, updated_at = excluded.updated_at,
    pending_approvals = excluded.pending_approvals, pending_client_calls = excluded.pending_client_calls,
    transcript_length = excluded.transcript_length, transcript_digest = excluded.transcript_digest,
    receipts_digest = excluded.receipts_digest, head = excluded.head, pad = excluded.pad`),
    // A running run saved as running again: its status and scope are not set, so no index of the table is written
    // (the list indexes hold runs at rest only, and the running runs' index is on their scope).
    updateRunning: db.prepare<[number, string | null, number, number, number, number, number, Uint8Array, Uint8Array, Uint8Array, string]>(
      `UPDATE cairn_runs SET revision = ?, binding_id = ?, created_at = ?,
    updated_at = ?, pending_approvals = ?, pending_client_calls = ?,
    transcript_length = ?, transcript_digest = ?, receipts_digest = ?, head = ?,
    pad = zeroblob(0)
  WHERE run_id = ?`),
    /** {@link updateRunning} by the run's number, only where the row is still what this object's last save left. */
    updateGuarded: db.prepare<[number, string | null, number, number, number, number, number, Uint8Array, Uint8Array, Uint8Array,
      number, string, string, number, Uint8Array, Uint8Array, number]>(
      `UPDATE cairn_runs SET revision = ?, binding_id = ?, created_at = ?,
    updated_at = ?, pending_approvals = ?, pending_client_calls = ?,
    transcript_length = ?, transcript_digest = ?, receipts_digest = ?, head = ?,
    pad = zeroblob(0)
  WHERE run_no = ? AND run_id = ? AND scope = ? AND status = 'running' AND revision = ? AND transcript_digest = ?
    AND receipts_digest = ? AND length(head) + length(pad) = ?`),
    trimMessages: db.prepare<[bigint, bigint]>('DELETE FROM cairn_run_messages WHERE row_key >= ? AND row_key < ?'),
    putMessage: db.prepare<[bigint, string, number, Uint8Array, number]>(`INSERT INTO cairn_run_messages (row_key, run_id, idx, body, revision)
  VALUES (?, ?, ?, ?, ?) ON CONFLICT (row_key) DO UPDATE SET run_id = excluded.run_id, idx = excluded.idx, body = excluded.body,
    revision = excluded.revision`),
    deleteRunMessages: db.prepare<[bigint, bigint]>('DELETE FROM cairn_run_messages WHERE row_key >= ? AND row_key < ?'),
    deleteRunReceipts: db.prepare<[bigint, bigint]>('DELETE FROM cairn_run_receipts WHERE row_key >= ? AND row_key < ?'),
    deleteReceipt: db.prepare<[bigint, bigint, string]>('DELETE FROM cairn_run_receipts WHERE row_key >= ? AND row_key < ? AND receipt_key = ?'),
    updateReceipt: db.prepare<[number, Uint8Array, number, bigint, bigint, string]>(`UPDATE cairn_run_receipts
  SET model_step = ?, body = ?, revision = ? WHERE row_key >= ? AND row_key < ? AND receipt_key = ?`),
    /**
     * Inserts a receipt at the next place among its step's keys [from, to): the one after the last taken (its key is
     * the insert's rowid, read as a BigInt). A plain insert with the key from a subquery costs about half of an
     * INSERT ... SELECT with RETURNING. A full step's next key is past its keys, and the caller refuses it.
     */
    appendReceipt: db.prepare<[bigint, bigint, bigint, string, string, number, Uint8Array, number]>(
      `INSERT INTO cairn_run_receipts (row_key, run_id, receipt_key, model_step, body, revision)
  VALUES ((SELECT COALESCE(MAX(row_key) + 1, ?) FROM cairn_run_receipts WHERE row_key >= ? AND row_key < ?), ?, ?, ?, ?, ?)`).safeIntegers(true),
    insertReceipt: db.prepare<[bigint, string, string, number, Uint8Array, number]>(`INSERT INTO cairn_run_receipts
  (row_key, run_id, receipt_key, model_step, body, revision) VALUES (?, ?, ?, ?, ?, ?)`),
    deleteRun: db.prepare<[number]>('DELETE FROM cairn_runs WHERE run_no = ?'),
  };
}

/**
 * The statements of the SQLite AgentRunStore (agent-runs.ts): the reads of a
 * load on a file of schema 8 or later (a run's rows as one range of keys, see
 * run-rows.ts) and on an older file opened read-only (by run id); the
 * statements of a save stay beside the save (agent-runs.ts).
 */
import type Database from 'better-sqlite3';
import { runEnd, runStart } from './run-rows.js';

/** What a load reads a run with: its head row, then its transcript and receipt rows.
 * @internal Takes or gives better-sqlite3 types, which stay out of the published declarations (a user need not install @types/better-sqlite3). */
export interface RunReads {
  head: Database.Statement<[string], HeadRow & { head: unknown }>;
  rows(runId: string, runNo: number, saves: boolean): { messages: MessageRead[]; receipts: ReceiptRead[] };
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

/** @internal */
export type MessageRead = { idx: number; body: unknown; revision?: number | null; run_id?: string };
/** @internal */
export type ReceiptRead = { receipt_key: string; body: unknown; revision?: number | null; run_id?: string };

/** The statements a load reads a run with, on a file of schema 8 or later: each table's rows as one range of keys.
 * @internal Takes or gives better-sqlite3 types, which stay out of the published declarations (a user need not install @types/better-sqlite3). */
export function keyedReads(db: Database.Database): RunReads {
  const range = (columns: string, table: string, order: string) =>
    db.prepare(`SELECT ${columns} FROM ${table} WHERE row_key >= ? AND row_key < ? ORDER BY ${order}`);
  const plain = {
    messages: range('idx, body, run_id', 'cairn_run_messages', 'row_key') as Database.Statement<[bigint, bigint], MessageRead>,
    receipts: range('receipt_key, body, run_id', 'cairn_run_receipts', 'row_key') as Database.Statement<[bigint, bigint], ReceiptRead>,
  };
  /** With the revision that wrote each row, for `load(runId, { saves: true })`; null when the rows have no revision column. */
  let withSaves: typeof plain | null | undefined;
  const rowsWithSaves = () => {
    if (withSaves !== undefined) return withSaves;
    try {
      withSaves = {
        messages: range('idx, body, run_id, revision', 'cairn_run_messages', 'row_key') as typeof plain.messages,
        receipts: range('receipt_key, body, run_id, revision', 'cairn_run_receipts', 'row_key') as typeof plain.receipts,
      };
    } catch {
      withSaves = null;
    }
    return withSaves;
  };
  return {
    head: db.prepare<[string], HeadRow & { head: unknown }>(
      'SELECT run_no, scope, status, revision, transcript_digest, receipts_digest, head FROM cairn_runs WHERE run_id = ?'),
    rows(_runId: string, runNo: number, saves: boolean) {
      const rows = (saves ? rowsWithSaves() : null) ?? plain;
      const from = runStart(runNo);
      const to = runEnd(runNo);
      return { messages: rows.messages.all(from, to), receipts: rows.receipts.all(from, to) };
    },
  };
}

/** The statements a load reads a run with on a file an older Cairn left (opened read-only, so not migrated): by run id.
 * @internal Takes or gives better-sqlite3 types, which stay out of the published declarations (a user need not install @types/better-sqlite3). */
export function legacyReads(db: Database.Database): RunReads {
  const plain = {
    messages: db.prepare<[string], MessageRead>('SELECT idx, body FROM cairn_run_messages WHERE run_id = ? ORDER BY idx'),
    receipts: db.prepare<[string], ReceiptRead>('SELECT receipt_key, body FROM cairn_run_receipts WHERE run_id = ? ORDER BY receipt_key'),
  };
  // Before migration 5 the rows have no revision column: they read as unknown.
  let withSaves: typeof plain | null | undefined;
  const rowsWithSaves = () => {
    if (withSaves !== undefined) return withSaves;
    try {
      withSaves = {
        messages: db.prepare('SELECT idx, body, revision FROM cairn_run_messages WHERE run_id = ? ORDER BY idx'),
        receipts: db.prepare('SELECT receipt_key, body, revision FROM cairn_run_receipts WHERE run_id = ? ORDER BY receipt_key'),
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
      return { messages: rows.messages.all(runId), receipts: rows.receipts.all(runId) };
    },
  };
}

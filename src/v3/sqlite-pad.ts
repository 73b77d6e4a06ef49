/**
 * The padding of a running V3 run's row on SQLite (`cairn_runs_v3.pad`,
 * schema 4). A save rewrites the run's row, whose head is a few KB: a leaf
 * cell and a chain of overflow pages. When the new row's payload is not the
 * size of the old one, SQLite frees the old overflow pages and takes new
 * ones, which also writes the free list's page and page 1; when it is the
 * same size, SQLite overwrites the row where it is and writes only the pages
 * whose bytes changed. So while a run runs, its row is padded with zeros up to
 * a size class: just under what a leaf cell and k overflow pages hold, for the
 * smallest such k, kept from save to save while the head still fits in it.
 *
 * The payload is counted as SQLite lays out a record (file format 4): a header
 * of the header's size and one serial type per column, then the values.
 */

import { intBytes, padFill, sizeClass, varintBytes } from '../stores/sqlite/cell-size.js';

/** The columns of a V3 run row, in table order, without the pad (the last column). */
export interface V3RowColumns {
  runId: string;
  scope: string;
  status: string;
  revision: number;
  bindingId: string | null;
  createdAt: number;
  updatedAt: number;
  pendingApprovals: number;
  pendingClientCalls: number;
  transcriptLength: number;
  contextSteps: number | null;
  transcriptDigest: Uint8Array;
  receiptsDigest: Uint8Array;
  head: Uint8Array;
  runNo: number;
}

/** Room left below a class, for a count that is off by a few bytes (the row then keeps its size all the same). */
const MARGIN = 8;


/** Serial-type bytes and value bytes of one column. */
function cell(value: string | number | Uint8Array | null): [number, number] {
  if (value === null) return [1, 0];
  if (typeof value === 'string') {
    const n = Buffer.byteLength(value);
    return [varintBytes(2 * n + 13), n];
  }
  if (typeof value === 'number') return [1, intBytes(value)];
  return [varintBytes(2 * value.length + 12), value.length];
}


/** The record's payload without the pad column (its serial type and value). */
export function payloadWithoutPad(c: V3RowColumns): { header: number; body: number } {
  let header = 0;
  let body = 0;
  for (const value of [c.runId, c.scope, c.status, c.revision, c.bindingId, c.createdAt, c.updatedAt, c.pendingApprovals,
    c.pendingClientCalls, c.transcriptLength, c.contextSteps, c.transcriptDigest, c.receiptsDigest, c.head, c.runNo]) {
    const [serial, size] = cell(value);
    header += serial;
    body += size;
  }
  return { header, body };
}

/**
 * The total payload a running run's row is padded to, and the zeros that take it there: `kept` (the size this
 * store's last save of the run wrote) while the row still fits in it and it is at most one page more than the
 * row's own class, else the row's own class.
 */
export function padFor(pageSize: number, c: V3RowColumns, kept: number | undefined): { pad: number; total: number } {
  const { header, body } = payloadWithoutPad(c);
  // The header's size (one byte while it is under 128), the other columns' serial types and values.
  const fixed = 1 + header + body;
  // With no pad: a zero-length blob's serial type, one byte.
  const bare = fixed + 1;
  const { total: own, perOverflow } = sizeClass(pageSize, bare, MARGIN);
  const total = kept !== undefined && kept >= bare && kept <= own + perOverflow ? kept : own;
  return { pad: padFill(total - fixed), total };
}

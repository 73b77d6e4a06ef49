/**
 * Where a run's transcript and receipt rows sit in the SQLite ops store
 * (schema 8 on): each table is keyed by one integer, so an insert writes one
 * b-tree and no index beside it. A run's number (`cairn_runs.run_no`, never
 * reused) times 2^32 is the start of its range:
 *
 *   - a transcript row: the start plus the message's index;
 *   - a receipt row: the start plus its model step (clamped to 0 ... 2^20 - 1)
 *     times 2^12, plus its place among that step's receipts (at most 4,096).
 *
 * So a load reads each table as one range, and a save finds the receipts of
 * the steps not settled yet (the only ones it may change) from the settled
 * step's place on. Keys are BigInts: they pass 2^53.
 */
import { InvalidOptionsError } from '../../errors/index.js';
import { cellLayout, intBytes } from './cell-size.js';

const RUN_SHIFT = 32n;
const STEP_SHIFT = 12n;
/** Receipts one model step holds at most. */
export const RECEIPTS_PER_STEP = 1 << Number(STEP_SHIFT);
const LAST_STEP_BUCKET = (1 << (Number(RUN_SHIFT) - Number(STEP_SHIFT))) - 1;
/** Run numbers stay below this, so every key fits SQLite's signed 64-bit integer. */
export const RUN_NUMBERS = 2 ** 31 - 1;

/** The first key of run `runNo`'s range; the range ends where the next run's starts. */
export function runStart(runNo: number): bigint {
  return BigInt(runNo) << RUN_SHIFT;
}

export function runEnd(runNo: number): bigint {
  return BigInt(runNo + 1) << RUN_SHIFT;
}

export function messageKey(runNo: number, index: number): bigint {
  return runStart(runNo) + BigInt(index);
}

/** The step a receipt's key is filed under: its model step, clamped (NaN and below 0 to 0, past the last to the last). */
function stepBucket(modelStep: number): number {
  if (!(modelStep > 0)) return 0;
  return Math.min(Math.floor(modelStep), LAST_STEP_BUCKET);
}

/** The first key of the receipts of model step `modelStep` (and of every later step's, which follow it). */
export function receiptStepStart(runNo: number, modelStep: number): bigint {
  return runStart(runNo) + (BigInt(stepBucket(modelStep)) << STEP_SHIFT);
}

/** The key of a receipt at `place` among its step's receipts; refuses a step that already holds as many as it may. */
export function receiptKey(runNo: number, modelStep: number, place: number): bigint {
  if (place >= RECEIPTS_PER_STEP) {
    throw new InvalidOptionsError(`The SQLite ops store keeps at most ${RECEIPTS_PER_STEP} receipts a model step.`, 'invalid_envelope');
  }
  return receiptStepStart(runNo, modelStep) + BigInt(place);
}

/** The receipt keys of one step: from {@link receiptStepStart}, {@link RECEIPTS_PER_STEP} of them. */
export function receiptStepEnd(runNo: number, modelStep: number): bigint {
  return receiptStepStart(runNo, modelStep) + BigInt(RECEIPTS_PER_STEP);
}

/** Bytes of a head row's payload the padding leaves spare below a size class: room for the estimate to be off. */
const PAD_MARGIN = 8;


/** The columns of a head row beside its head and pad, as a save writes them. */
export interface HeadColumns {
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
}

/**
 * The head row's layout (schema 9 on): how many bytes the fill inside its head takes (see codec.ts, encodeWithTail),
 * given the head's bytes before the fill and after it (its tail: what the run never changes, see record.ts,
 * HeadTail). The `pad` column is left empty, so the head's tail is the end of the row's payload, and the fill makes
 * the payload just under what a leaf cell and k overflow pages hold (a leaf then keeps pageSize - 43 bytes of it,
 * each overflow page pageSize - 4):
 *
 *   - a running run's saves alternate between heads of a few sizes (a call's `executing` save holds the call's
 *     snapshot, the step's checkpoint does not); of one size, the row is rewritten where it is and SQLite writes
 *     only the pages whose bytes changed;
 *   - a tail of a quarter of a page or more starts on an overflow page of its own, the fill's zeros before it: as
 *     long as the tail is the same, those pages are the same bytes and no save writes them.
 *
 * A run whose heads straddle two classes keeps the larger one rather than changing size at every save; it goes back
 * to its own class only past one page more than that.
 */
export function headFill(
  pageSize: number, columns: HeadColumns, stored?: { padded: number | null } | null,
): (before: number, after: number) => number {
  const text = (value: string | null) => (value === null ? 0 : Buffer.byteLength(value));
  // The record's header (its size and a serial type a column, two bytes for the head, one for the empty pad) and the
  // values beside the head.
  const base = 17 + text(columns.runId) + text(columns.scope) + text(columns.status) + text(columns.bindingId)
    + intBytes(columns.revision) + intBytes(columns.createdAt) + intBytes(columns.updatedAt) + intBytes(columns.pendingApprovals)
    + intBytes(columns.pendingClientCalls) + intBytes(columns.transcriptLength) + 64;
  const layout = cellLayout(pageSize);
  const inLeaf = layout.inLeaf - PAD_MARGIN;
  const perOverflow = layout.perOverflow;
  return (before, after) => {
    const apart = after * 4 >= perOverflow;
    const tailPages = apart ? Math.ceil(after / perOverflow) : 0;
    const variable = base + before + 2 + (apart ? 0 : after);
    let pages = Math.max(0, Math.ceil((variable - inLeaf) / perOverflow)) + tailPages;
    const kept = stored && typeof stored.padded === 'number' ? Math.round((base + stored.padded - inLeaf) / perOverflow) : -1;
    if (kept === pages + 1) pages = kept;
    return inLeaf + pages * perOverflow - base - before - after;
  };
}

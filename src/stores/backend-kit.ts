/**
 * What a row-based backend needs to write runs as Cairn's own stores do: the
 * shared planner and the reader of a stored record: the `cairn/stores` entry
 * (see docs/stores.md, "Writing a backend"). `cairn/testing` re-exports it
 * beside the conformance initializer.
 */
export {
  loadRecord, planSave, readIndex, readRecord, SaveMemory,
  type MessageRow, type PlanIndex, type ReadRecord, type ReceiptRow, type SavePlan, type StoredRows, type StoredState,
} from './write-plan.js';
export { RECORD_FORMAT, READABLE_FORMATS } from './codec.js';
// A journal backend checks its arguments as Cairn's own journals do.
export { checkAppend, readLimit } from '../ui/journal.js';

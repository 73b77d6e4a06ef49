/**
 * How many bytes SQLite (file format 4) gives a row's payload, and the size
 * classes a padded row is kept in: the ops store's head rows
 * (run-rows.ts) and the V3 store's run rows (src/v3/sqlite-pad.ts) are both
 * padded with zeros up to just under what a leaf cell and k overflow pages
 * hold, so a save that rewrites the row keeps its size and SQLite overwrites
 * it in place instead of freeing and taking overflow pages.
 */

/** The bytes SQLite stores an integer column's value in (its serial type's size; 0 and 1 take none). */
export function intBytes(n: number): number {
  if (!Number.isSafeInteger(n)) return 8;
  if (n === 0 || n === 1) return 0;
  const a = n < 0 ? -n - 1 : n;
  if (a < 0x80) return 1;
  if (a < 0x8000) return 2;
  if (a < 0x800000) return 3;
  if (a < 0x80000000) return 4;
  if (a < 0x800000000000) return 6;
  return 8;
}

/** The bytes of a varint (a record header's serial types and its size). */
export const varintBytes = (n: number): number => (n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5);

/** What a table leaf cell keeps of a payload at most (`inLeaf`), and each overflow page (`perOverflow`). */
export function cellLayout(pageSize: number): { inLeaf: number; perOverflow: number } {
  return { inLeaf: pageSize - 35, perOverflow: pageSize - 4 };
}

/**
 * The largest payload of the smallest class that holds `bytes` (with `margin` bytes to spare for a count that is
 * off), in the {@link cellLayout} of `pageSize`.
 */
export function sizeClass(pageSize: number, bytes: number, margin: number): { total: number; perOverflow: number } {
  const { inLeaf, perOverflow } = cellLayout(pageSize);
  const pages = Math.max(0, Math.ceil((bytes + margin - inLeaf) / perOverflow));
  return { total: inLeaf + pages * perOverflow - margin, perOverflow };
}

/**
 * The zeros of a pad column that, with their serial type, take `room` bytes: one serial byte for up to 57
 * zeros, two above; at 59 neither fits exactly and the pad comes one byte short.
 */
export function padFill(room: number): number {
  return room - 2 >= 58 ? room - 2 : Math.max(0, Math.min(57, room - 1));
}

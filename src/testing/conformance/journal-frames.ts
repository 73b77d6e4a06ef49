/** The frames and bodies the journal conformance cases write, and how they read them back. */
import assert from 'node:assert/strict';
import type { AgentStreamJournal, JournalFrame, JournalHead } from '../../ui/journal.js';

/** Bodies a wire sends: JSON text of every shape, some awkward on purpose. */
export const AWKWARD_BODIES = [
  '{"type":"text-delta","delta":"héllo wörld"}',
  JSON.stringify({ text: '日本語のテキスト, 한국어, עברית, العربية' }),
  JSON.stringify({ emoji: '👩‍👩‍👧‍👦 🏳️‍🌈 🇯🇵 𝄞 a\u0301' }),
  JSON.stringify({ escapes: 'quote " backslash \\ tab \t newline \n cr \r nul \u0000 bell \u0007 ls \u2028 ps \u2029' }),
  '{"sql":"\'); DROP TABLE cairn_journal_frames; --","like":"%_\\\\"}',
  '  {"spaced" : [ 1 , 2 ]}\n',
  '"a string"',
  '',
  '{"bom":"\uFEFF","nbsp":"\u00A0","zwj":"\u200D","max":"\uFFFF","astral":"\u{10FFFF}"}',
];

/** A body of `bytes` characters of JSON text that does not repeat in short periods. */
export function largeBody(bytes: number): string {
  const head = '{"type":"data-agent","data":{"draft":"';
  const tail = '"}}';
  let text = '';
  for (let i = 0; text.length < bytes - head.length - tail.length; i++) text += `${i.toString(36)}-ü-`;
  return head + text.slice(0, bytes - head.length - tail.length) + tail;
}

/** Frames seq `after + 1` on; the last ends its leg when `end` says so. */
export function framesAfter(after: number, count: number, options: { end?: boolean; tag?: string } = {}): JournalFrame[] {
  return Array.from({ length: count }, (_, i) => ({
    seq: after + i + 1,
    body: JSON.stringify({ seq: after + i + 1, tag: options.tag ?? 'frame' }),
    end: options.end === true && i === count - 1,
  }));
}

/** Every frame of a stream, paging with `limit`. */
export async function readAll(journal: AgentStreamJournal, streamId: string, limit = 1000): Promise<JournalFrame[]> {
  const all: JournalFrame[] = [];
  for (;;) {
    const page = await journal.read(streamId, all.length, limit);
    all.push(...page);
    if (page.length < limit) return all;
  }
}

/** The head without its time (which a case compares on its own). */
export function headOf(head: JournalHead | undefined): Omit<JournalHead, 'updatedAt'> | undefined {
  if (head === undefined) return undefined;
  assert.equal(typeof head.updatedAt, 'number', 'head.updatedAt must be a number of ms');
  assert.ok(Number.isFinite(head.updatedAt), 'head.updatedAt must be finite');
  return { seq: head.seq, ended: head.ended, scope: head.scope };
}

/** Frames as the contract has them: exactly seq, body and end. */
export function plain(frames: readonly JournalFrame[]): JournalFrame[] {
  return frames.map((frame) => ({ seq: frame.seq, body: frame.body, end: frame.end }));
}

/**
 * The versioned memory-intent chart's entry and error helpers, and what a
 * tool write's chart does with events out of order: the entry a run stores
 * must be plain JSON holding only what the protocol says, and an event the
 * intent cannot take must change nothing.
 */
import { createActor } from 'xstate';
import { describe, expect, it, vi } from 'vitest';
import {
  versionedIntentMachine, intentEntryOf, intentErrorOf, PERMANENT_INTENT_ERROR_CODES, VERSIONED_INTENT_MACHINE_VERSION,
} from 'cairn/machines';
import type { VersionedIntentEvent, VersionedIntentInput } from 'cairn/machines';

const receipt = { requestDigest: 'sha256:ab', planned: 1, scopeRevision: 4, committedAt: 50 };

function toolIntent(events: VersionedIntentEvent[], input: VersionedIntentInput = { operationId: 'tool:r:0:c1', kind: 'tool' }) {
  const actor = createActor(versionedIntentMachine, { input });
  actor.start();
  for (const event of events) actor.send(event);
  return actor.getSnapshot();
}

describe('intentErrorOf', () => {
  it('keeps name, message and a string code, nothing else', () => {
    const error = Object.assign(new Error('No JSON.'), { name: 'MemoryError', code: 'memory_llm_invalid', stack: 'at x', secret: 'k' });
    expect(intentErrorOf(error)).toEqual({ name: 'MemoryError', message: 'No JSON.', code: 'memory_llm_invalid' });
    expect(intentErrorOf(new TypeError('bad'))).toEqual({ name: 'TypeError', message: 'bad' });
    expect(intentErrorOf(Object.assign(new Error('n'), { code: 42 }))).toEqual({ name: 'Error', message: 'n' });
  });

  it('makes data of anything thrown, and cuts a long message', () => {
    expect(intentErrorOf('plain string')).toEqual({ name: 'Error', message: 'plain string' });
    expect(intentErrorOf(undefined)).toEqual({ name: 'Error', message: 'undefined' });
    const long = intentErrorOf(new Error('x'.repeat(5000)));
    expect(long.message).toHaveLength(1000);
    expect(long.message.endsWith('…')).toBe(true);
  });

  it('treats only a receipt mismatch as an error no retry fixes', () => {
    expect(PERMANENT_INTENT_ERROR_CODES).toEqual(['memory_receipt_mismatch']);
  });
});

describe('intentEntryOf', () => {
  it('gives a fresh intent as intended, leaving out every empty field', () => {
    const fresh = createActor(versionedIntentMachine, { input: { operationId: 'extract:r', kind: 'extract' } }).getSnapshot();
    expect(intentEntryOf(fresh)).toEqual({ operationId: 'extract:r', kind: 'extract', status: 'intended' });
    expect(versionedIntentMachine.id).toBe('versionedIntent');
    expect(versionedIntentMachine.version).toBe(String(VERSIONED_INTENT_MACHINE_VERSION));
  });

  it('reads a persisted snapshot after a JSON round trip the same as the live one', () => {
    const actor = createActor(versionedIntentMachine, { input: { operationId: 'tool:r:0:c1', kind: 'tool' } });
    actor.start();
    actor.send({ type: 'EXECUTED', receipt });
    const persisted = JSON.parse(JSON.stringify(actor.getPersistedSnapshot())) as never;
    expect(intentEntryOf(persisted)).toEqual(intentEntryOf(actor.getSnapshot()));
    expect(intentEntryOf(persisted)).toEqual({
      operationId: 'tool:r:0:c1', kind: 'tool', status: 'committed', requestDigest: 'sha256:ab', planned: 1,
      receipt: { scopeRevision: 4, committedAt: 50 },
    });
  });

  it('copies: changing an entry leaves the snapshot as it was', () => {
    const snap = toolIntent([{ type: 'EXECUTED', receipt }]);
    const entry = intentEntryOf(snap);
    entry.receipt!.scopeRevision = 99;
    expect(intentEntryOf(snap).receipt?.scopeRevision).toBe(4);
  });
});

describe('a tool write moved by events', () => {
  it('takes a receipt, then the completion, and ends acknowledged', () => {
    const end = toolIntent([{ type: 'EXECUTED', receipt }, { type: 'COMPLETED' }]);
    expect(end.status).toBe('done');
    expect(end.output).toEqual({
      operationId: 'tool:r:0:c1', kind: 'tool', status: 'acknowledged', requestDigest: 'sha256:ab', planned: 1,
      receipt: { scopeRevision: 4, committedAt: 50 },
    });
  });

  it('ignores a completion before the receipt, and anything after it ended', () => {
    const early = toolIntent([{ type: 'COMPLETED' }]);
    expect(early.value).toEqual({ tool: 'intended' });
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const ended = toolIntent([{ type: 'EXECUTED', receipt }, { type: 'COMPLETED' }, { type: 'FAILED', error: { name: 'Error', message: 'late' } }]);
    warn.mockRestore();
    expect(ended.output?.status).toBe('acknowledged');
    expect(ended.output?.error).toBeUndefined();
  });

  it('keeps the receipt when it fails after the commit: the memory change stands', () => {
    const end = toolIntent([{ type: 'EXECUTED', receipt }, { type: 'FAILED', error: { name: 'ProjectionError', message: 'no projection' } }]);
    expect(end.output).toMatchObject({ status: 'failed', receipt: { scopeRevision: 4, committedAt: 50 }, error: { name: 'ProjectionError' } });
  });

  it('fails on a receipt of another request than the one it holds', () => {
    const end = toolIntent([{ type: 'EXECUTED', receipt }], {
      operationId: 'tool:r:0:c1', kind: 'tool', stored: { operationId: 'tool:r:0:c1', kind: 'tool', status: 'intended', requestDigest: 'sha256:other' },
    });
    expect(end.output?.status).toBe('failed');
    expect(end.output?.error?.code).toBe('memory_receipt_mismatch');
    // The digest it held stays; the refused receipt is not taken.
    expect(end.output?.requestDigest).toBe('sha256:other');
    expect(end.output?.receipt).toBeUndefined();
  });
});

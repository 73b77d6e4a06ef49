/**
 * The replay journal of the UI wire: the frames each stream has sent, in
 * order, so a client that lost its connection reads again from its cursor.
 *
 * A journal stores frames as opaque JSON text with their sequence number; it
 * knows nothing of what a frame says beyond whether it ends a leg. Backends:
 * {@link createInMemoryAgentStreamJournal} here, and the `journal` member of
 * the SQLite and PostgreSQL ops stores. The conformance suite in
 * `cairn/testing` (`defineJournalConformance`) is what a backend must pass.
 */
import { CairnError, InvalidOptionsError } from '../errors/index.js';

/** One frame as a journal keeps it. */
export interface JournalFrame {
  /** 1, 2, 3, ... within its stream, with no gap. */
  seq: number;
  /** The frame's JSON text, exactly as it went out. */
  body: string;
  /** Whether this frame is the last of its leg (the leg came to rest or failed). */
  end: boolean;
}

/** Where a stream stands. */
export interface JournalHead {
  /** The last seq written (0 for a stream with no frame). */
  seq: number;
  /** Whether the last frame ended its leg (true for a stream with no frame). */
  ended: boolean;
  /** The scope the stream was created under, if any. */
  scope: string | null;
  /** When the last frame was written, in ms on the journal's clock. */
  updatedAt: number;
}

/**
 * What `toAgentStreamResponse` and `resumeAgentStreamResponse` need of a
 * store. Every method is one atomic operation on the backend.
 */
export interface AgentStreamJournal {
  /** The stream's head, or undefined when the journal has no such stream (never written, or pruned). */
  head(streamId: string): Promise<JournalHead | undefined>;
  /**
   * Appends `frames` to the stream if its last seq is still `after` (0 for a
   * new stream), in one transaction. The frames' seqs must run on from
   * `after` with no gap. A stream whose head moved, or one created under
   * another scope, is refused with JournalConflictError and nothing is
   * written. `scope` is recorded when the stream is created.
   */
  append(streamId: string, after: number, frames: readonly JournalFrame[], options?: { scope?: string }): Promise<void>;
  /** The frames with seq above `after`, in order, at most `limit` (default 1,000). */
  read(streamId: string, after: number, limit?: number): Promise<JournalFrame[]>;
  /** Deletes every stream whose last frame was written before `before` (ms). Returns how many went. */
  prune(options: { before: number }): Promise<number>;
}

/** A journal refused a write: the stream's head moved (another writer), or its scope differs. */
export class JournalConflictError extends CairnError {
  constructor(readonly streamId: string, readonly expected: number, readonly found: number | null, why?: string) {
    super('journal_conflict', why ?? `Stream "${streamId}" is at seq ${found ?? 'none'}, not ${expected}: another leg wrote to it.`, {
      fault: 'user',
    });
    this.name = 'JournalConflictError';
  }
}

/** Checks an append's frames against `after`; shared by every backend. */
export function checkAppend(streamId: string, after: number, frames: readonly JournalFrame[]): void {
  if (typeof streamId !== 'string' || streamId === '') throw new InvalidOptionsError('journal: streamId must be a non-empty string.');
  if (!Number.isSafeInteger(after) || after < 0) throw new InvalidOptionsError('journal: after must be an integer of 0 or more.');
  if (!Array.isArray(frames) || frames.length === 0) throw new InvalidOptionsError('journal: append needs at least one frame.');
  frames.forEach((frame, i) => {
    if (!frame || frame.seq !== after + i + 1 || typeof frame.body !== 'string' || typeof frame.end !== 'boolean') {
      throw new InvalidOptionsError(`journal: frame ${i} of an append after seq ${after} must be { seq: ${after + i + 1}, body: string, end: boolean }.`);
    }
  });
  checkStorableBodies(frames);
}

// A raw NUL, or half of a surrogate pair: neither occurs in JSON.stringify's output, and neither survives a UTF-8 text column.
const UNSTORABLE = /[\0\p{Cs}]/u;

/**
 * Refuses frames whose body a UTF-8 text column would change: a NUL
 * (PostgreSQL refuses it) or a lone surrogate (written as U+FFFD). A frame is
 * JSON text, which never holds either unescaped.
 */
export function checkStorableBodies(frames: readonly JournalFrame[]): void {
  frames.forEach((frame, i) => {
    if (UNSTORABLE.test(frame.body)) {
      throw new InvalidOptionsError(`journal: frame ${i} (seq ${frame.seq}) holds a NUL or a lone surrogate, which no JSON text holds unescaped.`);
    }
  });
}

/** The stream id of a head or read, checked: a string (an append refuses '' too, so no stream has that id). */
export function checkStreamId(streamId: unknown): asserts streamId is string {
  if (typeof streamId !== 'string') throw new InvalidOptionsError('journal: streamId must be a string.');
}

/** The scope of an append, checked: a string when given. */
export function appendScope(options: { scope?: string } | undefined): string | null {
  const scope = options?.scope;
  if (scope === undefined) return null;
  if (typeof scope !== 'string') throw new InvalidOptionsError('journal: scope must be a string when given.');
  return scope;
}

/** The `after` of a read, checked: an integer of 0 or more. */
export function readAfter(after: unknown): number {
  if (typeof after !== 'number' || !Number.isSafeInteger(after) || after < 0) {
    throw new InvalidOptionsError('journal: after must be an integer of 0 or more.');
  }
  return after;
}

/** The `before` of a prune, checked: a number of ms (Infinity prunes every stream). */
export function pruneBefore(options: { before: number } | undefined): number {
  const before = options?.before;
  if (typeof before !== 'number' || Number.isNaN(before)) throw new InvalidOptionsError('journal: prune needs { before } in ms.');
  return before;
}

/** The read limit, checked: a positive integer, at most 10,000. */
export function readLimit(limit: number | undefined): number {
  if (limit === undefined) return 1000;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > 10_000) {
    throw new InvalidOptionsError('journal: limit must be an integer from 1 to 10000.');
  }
  return limit;
}

export interface InMemoryJournalOptions {
  /** The clock of `updatedAt` and of the retention. @default Date.now */
  clock?: { now(): number };
  /**
   * How long a stream is kept after its last frame; older streams are dropped
   * on the next append. @default 86_400_000 (one day)
   */
  retentionMs?: number;
  /** Most streams kept; beyond it the least recently written go first. @default 1000 */
  maxStreams?: number;
}

interface MemoryStream {
  frames: JournalFrame[];
  scope: string | null;
  updatedAt: number;
}

/**
 * A journal in this process's memory: for tests, demos and a single server.
 * Bounded by `retentionMs` and `maxStreams`.
 */
export function createInMemoryAgentStreamJournal(options: InMemoryJournalOptions = {}): AgentStreamJournal {
  const clock = options.clock ?? { now: () => Date.now() };
  const retentionMs = options.retentionMs ?? 86_400_000;
  const maxStreams = options.maxStreams ?? 1000;
  if (!(retentionMs > 0)) throw new InvalidOptionsError('createInMemoryAgentStreamJournal: retentionMs must be above 0.');
  if (!Number.isSafeInteger(maxStreams) || maxStreams < 1) {
    throw new InvalidOptionsError('createInMemoryAgentStreamJournal: maxStreams must be an integer of 1 or more.');
  }
  // A Map keeps insertion order: a written stream is moved to the end, so the first is the least recently written.
  const streams = new Map<string, MemoryStream>();
  const prune = (before: number) => {
    let dropped = 0;
    for (const [id, stream] of streams) {
      if (stream.updatedAt < before) {
        streams.delete(id);
        dropped += 1;
      }
    }
    return dropped;
  };
  return {
    async head(streamId) {
      checkStreamId(streamId);
      const stream = streams.get(streamId);
      if (!stream) return undefined;
      const last = stream.frames[stream.frames.length - 1];
      return { seq: last?.seq ?? 0, ended: last?.end ?? true, scope: stream.scope, updatedAt: stream.updatedAt };
    },
    async append(streamId, after, frames, appendOptions = {}) {
      checkAppend(streamId, after, frames);
      const stream = streams.get(streamId);
      const found = stream ? stream.frames.length : null;
      if ((found ?? 0) !== after) throw new JournalConflictError(streamId, after, found);
      const scope = appendScope(appendOptions);
      if (stream && stream.scope !== scope) {
        throw new JournalConflictError(streamId, after, found, `Stream "${streamId}" belongs to another scope.`);
      }
      const now = clock.now();
      const next: MemoryStream = stream ?? { frames: [], scope, updatedAt: now };
      for (const frame of frames) next.frames.push({ seq: frame.seq, body: frame.body, end: frame.end });
      next.updatedAt = now;
      streams.delete(streamId);
      streams.set(streamId, next);
      prune(now - retentionMs);
      while (streams.size > maxStreams) streams.delete(streams.keys().next().value as string);
    },
    async read(streamId, after, limit) {
      checkStreamId(streamId);
      const from = readAfter(after);
      const max = readLimit(limit);
      const stream = streams.get(streamId);
      if (!stream) return [];
      // seq n sits at index n - 1.
      return stream.frames.slice(from, from + max).map((frame) => ({ ...frame }));
    },
    async prune(options) {
      return prune(pruneBefore(options));
    },
  };
}

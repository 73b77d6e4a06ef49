/**
 * `toAgentStreamResponse` puts a run's stream on the UI wire as a standard
 * `Response` (Server-Sent Events), journaling each frame before it goes out
 * when a journal is given; `resumeAgentStreamResponse` serves a client that
 * comes back with a cursor: the frames it missed, then the live leg.
 */
import { CairnError, InvalidOptionsError, serializeError } from '../errors/index.js';
import type { AgentEvent } from '../agent/types.js';
import type { AgentStream } from '../agent/stream.js';
import { JournalConflictError, type AgentStreamJournal, type JournalFrame } from './journal.js';
import {
  numbered, sseEvent, terminalState, wireError, WireTranslator, type AgentUiPart, type WireError,
} from './wire.js';

export interface AgentStreamResponseOptions {
  /** The run's id, named in every `data-agent` frame. */
  runId: string;
  /**
   * The journal that keeps the frames for replay. Without one, the frames
   * carry a seq but no SSE id, and the leg's first frame says it cannot be
   * read again (`replayable: false`).
   */
  store?: AgentStreamJournal;
  /** The journal stream of this run (one per run). @default runId */
  streamId?: string;
  /** Recorded with a new journal stream; a replay must name the same one. Pass the run's session scope. */
  scope?: string;
  /** Headers added to the response's own. */
  headers?: Record<string, string>;
}

/** A run's journal is refused a replay from this cursor, or has no such stream. */
export class AgentStreamReplayError extends CairnError {
  constructor(
    code: 'journal_cursor_invalid' | 'journal_stream_not_found',
    readonly streamId: string,
    message: string,
  ) {
    super(code, message, { fault: 'user' });
    this.name = 'AgentStreamReplayError';
  }
}

const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' };

/**
 * A leg being written in this process: what it has journaled so far, for a
 * replay that catches up with it. Keyed by journal object, then stream id.
 */
interface LiveLeg {
  frames: JournalFrame[];
  ended: boolean;
  listeners: Set<() => void>;
}
const liveLegs = new WeakMap<AgentStreamJournal, Map<string, LiveLeg>>();

function legsOf(journal: AgentStreamJournal): Map<string, LiveLeg> {
  let legs = liveLegs.get(journal);
  if (!legs) liveLegs.set(journal, (legs = new Map()));
  return legs;
}

/** Where the frames of a response go: the client's stream, while it reads. */
class Outlet {
  #controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  #closed = false;
  readonly body: ReadableStream<Uint8Array>;

  constructor(onCancel?: () => void) {
    this.body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
      },
      cancel: () => {
        // The client went away; whatever writes the frames goes on without it.
        this.#closed = true;
        onCancel?.();
      },
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  send(chunk: Uint8Array): void {
    if (this.#closed) return;
    try {
      this.#controller!.enqueue(chunk);
    } catch {
      this.#closed = true;
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#controller!.close();
    } catch {
      // already closed by a cancel
    }
  }
}

function checkOptions(options: AgentStreamResponseOptions): { runId: string; streamId: string } {
  if (!options || typeof options.runId !== 'string' || options.runId === '') {
    throw new InvalidOptionsError('toAgentStreamResponse: options.runId must be a non-empty string.');
  }
  if (options.streamId !== undefined && (typeof options.streamId !== 'string' || options.streamId === '')) {
    throw new InvalidOptionsError('toAgentStreamResponse: options.streamId must be a non-empty string.');
  }
  if (options.store !== undefined && (typeof options.store?.append !== 'function' || typeof options.store?.read !== 'function')) {
    throw new InvalidOptionsError('toAgentStreamResponse: options.store must be an AgentStreamJournal (head, append, read, prune).');
  }
  return { runId: options.runId, streamId: options.streamId ?? options.runId };
}

/**
 * Serializes a `streamAgent` or `resumeStreamAgent` stream to the UI wire.
 * It starts reading the stream before it returns, so no event is lost
 * whatever the route does next; the run goes on to its end even if the client
 * disconnects (its frames still go to the journal).
 *
 * A leg the run refuses before it begins (an unknown run, another scope's
 * run, a second executor, answers that do not cover every pending call) goes
 * out on this response only, without seqs or event ids, and nothing is
 * journaled.
 */
export function toAgentStreamResponse<T>(stream: AgentStream<T>, options: AgentStreamResponseOptions): Response {
  const { runId, streamId } = checkOptions(options);
  const events = stream.events[Symbol.asyncIterator]();
  const outlet = new Outlet();
  void pump(events, outlet, { runId, streamId, journal: options.store, scope: options.scope }).catch(() => outlet.close());
  return new Response(outlet.body, { status: 200, headers: { ...SSE_HEADERS, ...options.headers } });
}

interface PumpContext {
  runId: string;
  streamId: string;
  journal: AgentStreamJournal | undefined;
  scope: string | undefined;
}

async function pump<T>(events: AsyncIterator<AgentEvent<T>>, outlet: Outlet, ctx: PumpContext): Promise<void> {
  const wire = new WireTranslator<T>(ctx.runId);
  // Until the run says it started, the leg may still be refused: hold what comes.
  const before: AgentEvent<T>[] = [];
  let started: AgentEvent<T> & { type: 'run-start' } | undefined;
  for (;;) {
    const next = await events.next();
    if (next.done) break;
    if (next.value.type === 'run-start') {
      started = next.value;
      break;
    }
    before.push(next.value);
    if (next.value.type === 'result') break;
  }
  if (!started) return refused(before, outlet, wire);

  const writer = await LegWriter.open(ctx, outlet);
  if (!writer) {
    // The journal could not be read: the run goes on, but this response has nothing it could number.
    await drain(events);
    return;
  }
  writer.write(wire.start(started.resumed, ctx.journal !== undefined, started.runId), false);
  for (const event of before) for (const part of wire.parts(event)) writer.write(part, false);
  let ended = false;
  for (;;) {
    const next = await events.next();
    if (next.done) break;
    const event = next.value;
    if (event.type === 'result') {
      writer.write(wire.end(terminalState(event.result)), true);
      ended = true;
      break;
    }
    for (const part of wire.parts(event)) writer.write(part, false);
  }
  if (!ended) {
    // The stream closed without a result: the engine itself failed (its error part is already out).
    const error: WireError = { name: 'CairnError', code: 'internal', message: 'The run ended without a result.' };
    writer.write(wire.end({ status: 'failed', error, steps: 0, usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 } }), true);
  }
  await writer.finished();
}

/** The frames of a refused leg: its error and its failed terminal state, without seqs, on this response only. */
function refused<T>(events: AgentEvent<T>[], outlet: Outlet, wire: WireTranslator<T>): void {
  for (const event of events) {
    if (event.type === 'error') sendUnnumbered(outlet, { type: 'error', error: wireError(event.error) });
    if (event.type === 'result') sendUnnumbered(outlet, wire.end(terminalState(event.result)));
  }
  outlet.close();
}

function sendUnnumbered<T>(outlet: Outlet, part: AgentUiPart<T>): void {
  outlet.send(sseEvent(JSON.stringify(numbered(part, undefined)), undefined));
}

async function drain<T>(events: AsyncIterator<AgentEvent<T>>): Promise<void> {
  for (;;) if ((await events.next()).done) return;
}

/**
 * Numbers a leg's frames on from the stream's head and sends each one only
 * once the journal holds it. Appends are grouped: while one is in flight, the
 * frames that come are appended together by the next.
 */
class LegWriter {
  #seq: number;
  #written: number;
  readonly #queue: JournalFrame[] = [];
  #flushing: Promise<void> | null = null;
  #broken = false;
  readonly #live: LiveLeg | undefined;

  private constructor(private readonly ctx: PumpContext, private readonly outlet: Outlet, head: number) {
    this.#seq = head;
    this.#written = head;
    if (ctx.journal) {
      this.#live = { frames: [], ended: false, listeners: new Set() };
      legsOf(ctx.journal).set(ctx.streamId, this.#live);
    }
  }

  static async open(ctx: PumpContext, outlet: Outlet): Promise<LegWriter | undefined> {
    if (!ctx.journal) return new LegWriter(ctx, outlet, 0);
    try {
      const head = await ctx.journal.head(ctx.streamId);
      if (head && head.scope !== (ctx.scope ?? null)) {
        throw new JournalConflictError(ctx.streamId, head.seq, head.seq, `Stream "${ctx.streamId}" belongs to another scope.`);
      }
      return new LegWriter(ctx, outlet, head?.seq ?? 0);
    } catch (error) {
      sendUnnumbered(outlet, { type: 'error', error: wireError(serializeError(error)) });
      outlet.close();
      return undefined;
    }
  }

  write<T>(part: AgentUiPart<T>, end: boolean): void {
    if (this.#broken) return;
    const seq = ++this.#seq;
    const body = JSON.stringify(numbered(part, seq));
    if (!this.ctx.journal) {
      this.outlet.send(sseEvent(body, undefined));
      if (end) this.outlet.close();
      return;
    }
    this.#queue.push({ seq, body, end });
    this.#flushing ??= this.#flush();
  }

  async #flush(): Promise<void> {
    try {
      await this.#flushQueue();
    } finally {
      this.#flushing = null;
    }
  }

  async #flushQueue(): Promise<void> {
    const journal = this.ctx.journal!;
    while (this.#queue.length > 0 && !this.#broken) {
      const batch = this.#queue.splice(0);
      try {
        await journal.append(this.ctx.streamId, this.#written, batch, this.ctx.scope !== undefined ? { scope: this.ctx.scope } : {});
      } catch (error) {
        // What the journal does not hold must not reach a client: a replay could not give it back.
        this.#broken = true;
        sendUnnumbered(this.outlet, { type: 'error', error: wireError(serializeError(error)) });
        this.#finish();
        return;
      }
      this.#written = batch[batch.length - 1]!.seq;
      for (const frame of batch) {
        this.outlet.send(sseEvent(frame.body, frame.seq));
        this.#live!.frames.push(frame);
        if (frame.end) this.#finish();
      }
      this.#notify();
    }
  }

  #finish(): void {
    this.outlet.close();
    if (this.#live && !this.#live.ended) {
      this.#live.ended = true;
      const legs = legsOf(this.ctx.journal!);
      if (legs.get(this.ctx.streamId) === this.#live) legs.delete(this.ctx.streamId);
      this.#notify();
    }
  }

  #notify(): void {
    for (const listener of [...this.#live!.listeners]) listener();
  }

  async finished(): Promise<void> {
    // A flush that ended before it was assigned (its append threw at once) leaves a settled promise behind: clear it.
    for (let flushing = this.#flushing; flushing !== null; flushing = this.#flushing) {
      await flushing;
      if (this.#flushing === flushing) this.#flushing = null;
    }
    if (!this.ctx.journal) this.outlet.close();
  }
}

export interface ResumeAgentStreamResponseOptions {
  /** The journal the run's legs were written to. */
  store: AgentStreamJournal;
  /** The run's journal stream (its run id, unless the legs were given another). */
  streamId: string;
  /** The scope the stream was written under; a stream of another scope is answered as not found. */
  scope?: string;
  /**
   * The last seq the client read. When absent, the request's `Last-Event-ID`
   * header, then its `cursor` query parameter, then 0 (from the start).
   */
  cursor?: string | number | null;
  /** The client's request: where the cursor is read from, and whose abort ends the response. */
  request?: Request;
  /**
   * How often the journal is read again while a leg runs in another process
   * (one that is not written through this module's objects here). @default 250
   */
  pollIntervalMs?: number;
  /** Longest a response follows a leg another process writes before it ends (the client reconnects). @default 300000 */
  followTimeoutMs?: number;
  /** Headers added to the response's own. */
  headers?: Record<string, string>;
}

/**
 * Serves a client from its cursor: every frame of the stream after it, then
 * the leg under way, if one is, until it ends. A cursor that is not a seq of
 * the stream is answered 400, a stream the journal does not hold (or holds
 * under another scope) 404, each with the error as JSON.
 */
export async function resumeAgentStreamResponse(options: ResumeAgentStreamResponseOptions): Promise<Response> {
  if (!options || typeof options.store?.read !== 'function' || typeof options.store?.head !== 'function') {
    throw new InvalidOptionsError('resumeAgentStreamResponse: options.store must be an AgentStreamJournal.');
  }
  if (typeof options.streamId !== 'string' || options.streamId === '') {
    throw new InvalidOptionsError('resumeAgentStreamResponse: options.streamId must be a non-empty string.');
  }
  const { store: journal, streamId } = options;
  const head = await journal.head(streamId);
  if (!head || head.scope !== (options.scope ?? null)) {
    return errorResponse(404, new AgentStreamReplayError('journal_stream_not_found', streamId, `The journal holds no stream "${streamId}".`));
  }
  const raw = options.cursor ?? options.request?.headers.get('last-event-id') ?? cursorParam(options.request) ?? 0;
  const cursor = typeof raw === 'number' ? raw : /^\d{1,15}$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(cursor) || cursor < 0 || cursor > head.seq) {
    return errorResponse(400, new AgentStreamReplayError(
      'journal_cursor_invalid', streamId, `Cursor ${JSON.stringify(String(raw))} is not a seq of stream "${streamId}" (0 to ${head.seq}).`,
    ));
  }
  let stop = false;
  const outlet = new Outlet(() => {
    stop = true;
  });
  options.request?.signal.addEventListener('abort', () => {
    stop = true;
    outlet.close();
  });
  const follow = async () => {
    let sent = cursor;
    const deadline = Date.now() + (options.followTimeoutMs ?? 300_000);
    const sendAll = (frames: readonly JournalFrame[]) => {
      for (const frame of frames) {
        if (frame.seq !== sent + 1) continue;
        outlet.send(sseEvent(frame.body, frame.seq));
        sent = frame.seq;
      }
    };
    while (!stop && !outlet.closed) {
      // What the journal holds first, page by page.
      for (;;) {
        const page = await journal.read(streamId, sent, 1000);
        sendAll(page);
        if (page.length < 1000) break;
      }
      const live = legsOf(journal).get(streamId);
      if (live && !live.ended) {
        // The leg is written here: follow it frame by frame.
        await new Promise<void>((resolve) => {
          const wake = () => {
            sendAll(live.frames.filter((f) => f.seq > sent));
            if (live.ended || stop || outlet.closed) {
              live.listeners.delete(wake);
              resolve();
            }
          };
          live.listeners.add(wake);
          wake();
        });
        if (live.ended) continue; // read the journal once more, then decide
      }
      const now = await journal.head(streamId);
      if (!now || (now.ended && now.seq <= sent)) break;
      if (now.seq > sent) continue;
      // Another process writes the leg: read the journal again shortly.
      if (Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, options.pollIntervalMs ?? 250));
    }
    outlet.close();
  };
  void follow().catch((error) => {
    sendUnnumbered(outlet, { type: 'error', error: wireError(serializeError(error)) });
    outlet.close();
  });
  return new Response(outlet.body, { status: 200, headers: { ...SSE_HEADERS, ...options.headers } });
}

function cursorParam(request: Request | undefined): string | undefined {
  if (!request) return undefined;
  try {
    return new URL(request.url).searchParams.get('cursor') ?? undefined;
  } catch {
    return undefined;
  }
}

function errorResponse(status: number, error: CairnError): Response {
  return new Response(JSON.stringify({ error: serializeError(error) }), { status, headers: { 'content-type': 'application/json' } });
}


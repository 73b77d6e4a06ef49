/**
 * The logic behind `useChat`, as plain TypeScript with no React: it sends the
 * prompt, reads the run's SSE wire frame by frame, folds each frame into the
 * chat state, keeps the run id and the cursor (the last SSE event id) where a
 * reload finds them, reconnects from that cursor when the connection drops,
 * and sends every verdict and client result of a suspension in one request.
 *
 * Browser-safe: it uses only `fetch`, `TextDecoder` and an optional
 * `Storage`; nothing from Node.
 */
import { CairnTypeError } from '../errors/index.js';

/** One frame off the wire: the parsed `data` of an SSE event, with its `id` when it had one. */
export interface WireFrame {
  /** The SSE event id (the frame's seq) as sent; absent on a response that cannot be replayed. */
  id?: string;
  data: unknown;
}

/** Folds frames into the state the page renders (`agentStateFromParts` from cairn/ui has this shape). */
export type FrameReducer<S> = (state: S, frames: readonly unknown[]) => S;

/** Where the run id and cursor survive a reload (`sessionStorage` in a browser). */
export interface CursorStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export interface ChatControllerOptions<S> {
  /** The native route: POST starts or resumes a run, GET `?runId=&cursor=` replays from a cursor. */
  api: string;
  /** The state before any frame. */
  initialState: S;
  /** How frames fold into the state. */
  reduce: FrameReducer<S>;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** @default globalThis.sessionStorage when there is one, else nothing survives a reload */
  storage?: CursorStorage | null;
  /** The storage key of this chat. @default 'cairn-chat' */
  storageKey?: string;
  /** How many times a dropped connection is retried in a row before the chat reports an error. @default 3 */
  maxReconnects?: number;
  /** Milliseconds before each reconnect. @default 500 */
  reconnectDelayMs?: number;
  /** Extra headers of every request (authentication). */
  headers?: Record<string, string>;
}

export interface ChatSnapshot<S> {
  /** The folded frames. */
  state: S;
  /** The run this chat drives, once the server named it. */
  runId: string | null;
  /** The last event id read; a reconnect asks for the frames after it. */
  cursor: string | null;
  /** `streaming` while a response is read; `error` after a request failed or reconnects ran out. */
  status: 'idle' | 'streaming' | 'error';
  error: string | null;
}

/** A verdict for one pending approval. */
export interface ChatVerdict {
  approvalId: string;
  token: string;
  approved: boolean;
  reason?: string;
}

/** A result for one pending client call. */
export interface ChatClientResult {
  toolCallId: string;
  output: unknown;
  isError?: boolean;
}

interface Saved {
  runId: string;
  cursor: string | null;
}

/**
 * Drives one chat. Subscribe to be told of every change; read `snapshot`.
 *
 * @example
 * const chat = new ChatController({ api: '/api/agent', initialState, reduce: agentStateFromParts });
 * chat.subscribe(() => render(chat.snapshot));
 * await chat.send('Publish the notes.');
 */
export class ChatController<S> {
  readonly #options: ChatControllerOptions<S>;
  readonly #listeners = new Set<() => void>();
  readonly #storage: CursorStorage | null;
  readonly #key: string;
  #snapshot: ChatSnapshot<S>;
  #abort: AbortController | null = null;

  constructor(options: ChatControllerOptions<S>) {
    if (!options || typeof options.api !== 'string' || typeof options.reduce !== 'function') {
      throw new CairnTypeError('invalid_options', 'ChatController needs { api, initialState, reduce }.');
    }
    this.#options = options;
    this.#storage = options.storage === undefined ? defaultStorage() : options.storage;
    this.#key = options.storageKey ?? 'cairn-chat';
    const saved = this.#load();
    this.#snapshot = { state: options.initialState, runId: saved?.runId ?? null, cursor: null, status: 'idle', error: null };
  }

  get snapshot(): ChatSnapshot<S> {
    return this.#snapshot;
  }

  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Whether a reload left a run to reconnect to. */
  get hasSavedRun(): boolean {
    return this.#load() !== undefined;
  }

  /** Starts a run with a prompt. Any run this chat drove before is forgotten. */
  send(prompt: string): Promise<void> {
    this.#forget();
    this.#set({ state: this.#options.initialState, runId: null, cursor: null, status: 'idle', error: null });
    return this.#request('POST', { prompt });
  }

  /** Resumes the suspended run with a verdict for every pending approval and a result for every pending client call, in one request. */
  resume(answers: { approvalResponses?: ChatVerdict[]; clientToolResults?: ChatClientResult[] }): Promise<void> {
    const runId = this.#snapshot.runId;
    if (!runId) return Promise.reject(new CairnTypeError('invalid_options', 'resume: this chat has no run yet.'));
    return this.#request('POST', {
      runId,
      approvalResponses: answers.approvalResponses ?? [],
      clientToolResults: answers.clientToolResults ?? [],
    });
  }

  /**
   * Reads the run again from the cursor a reload left (or the current one):
   * first the frames missed, then the live leg if one runs. Without a saved
   * run it does nothing.
   */
  reconnect(): Promise<void> {
    const saved = this.#load();
    const runId = this.#snapshot.runId ?? saved?.runId;
    if (!runId) return Promise.resolve();
    // After a reload the state is empty, so the replay starts from the beginning; the reducer drops what it has seen.
    const cursor = this.#snapshot.cursor;
    if (this.#snapshot.runId !== runId) this.#set({ ...this.#snapshot, runId });
    return this.#request('GET', undefined, cursor);
  }

  /** Stops reading (the run goes on on the server). */
  stop(): void {
    this.#abort?.abort();
    this.#abort = null;
  }

  async #request(method: 'GET' | 'POST', body: unknown, cursor: string | null = null): Promise<void> {
    this.stop();
    let failures = 0;
    const max = this.#options.maxReconnects ?? 3;
    let next: { method: 'GET' | 'POST'; body: unknown; cursor: string | null } = { method, body, cursor };
    for (;;) {
      const abort = new AbortController();
      this.#abort = abort;
      this.#set({ ...this.#snapshot, status: 'streaming', error: null });
      try {
        const ended = await this.#read(next.method, next.body, next.cursor, abort.signal);
        if (abort.signal.aborted) return;
        if (ended) {
          this.#set({ ...this.#snapshot, status: 'idle' });
          return;
        }
        failures = 0;
      } catch (error) {
        if (abort.signal.aborted) return;
        failures += 1;
        if (failures > max || !this.#snapshot.runId || error instanceof RequestRefused) {
          this.#set({ ...this.#snapshot, status: 'error', error: error instanceof Error ? error.message : String(error) });
          return;
        }
      }
      // The response ended before the run came to rest, or the connection dropped: read on from the cursor.
      await delay(this.#options.reconnectDelayMs ?? 500);
      if (abort.signal.aborted) return;
      next = { method: 'GET', body: undefined, cursor: this.#snapshot.cursor };
    }
  }

  /** Reads one response to its end. Returns whether the run came to rest in it. */
  async #read(method: 'GET' | 'POST', body: unknown, cursor: string | null, signal: AbortSignal): Promise<boolean> {
    const doFetch = this.#options.fetch ?? globalThis.fetch;
    const headers: Record<string, string> = { accept: 'text/event-stream', ...this.#options.headers };
    let url = this.#options.api;
    if (method === 'GET') {
      const query = new URLSearchParams({ runId: this.#snapshot.runId ?? '' });
      if (cursor !== null) {
        query.set('cursor', cursor);
        headers['last-event-id'] = cursor;
      }
      url += (url.includes('?') ? '&' : '?') + query.toString();
    } else headers['content-type'] = 'application/json';
    const response = await doFetch(url, { method, headers, signal, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    if (!response.ok || !response.body) {
      const text = await response.text().catch(() => '');
      throw new RequestRefused(`${method} ${this.#options.api}: ${response.status} ${text}`.trim());
    }
    let ended = false;
    for await (const frame of readSse(response.body, signal)) {
      if (this.#apply(frame)) ended = true;
    }
    return ended;
  }

  /** Folds one frame; returns whether it ended the leg (a terminal state). */
  #apply(frame: WireFrame): boolean {
    const data = frame.data as { type?: string; runId?: string; data?: { runId?: string; terminal?: unknown; state?: string } } | null;
    const runId = runIdOf(data) ?? this.#snapshot.runId;
    const cursor = frame.id ?? this.#snapshot.cursor;
    const state = this.#options.reduce(this.#snapshot.state, [frame.data]);
    this.#set({ ...this.#snapshot, state, runId, cursor });
    if (runId) this.#save({ runId, cursor });
    return isTerminal(data);
  }

  #set(snapshot: ChatSnapshot<S>): void {
    this.#snapshot = snapshot;
    for (const listener of [...this.#listeners]) listener();
  }

  #load(): Saved | undefined {
    try {
      const raw = this.#storage?.getItem(this.#key);
      if (!raw) return undefined;
      const saved = JSON.parse(raw) as Partial<Saved>;
      return typeof saved.runId === 'string' ? { runId: saved.runId, cursor: typeof saved.cursor === 'string' ? saved.cursor : null } : undefined;
    } catch {
      return undefined;
    }
  }

  #save(saved: Saved): void {
    try {
      this.#storage?.setItem(this.#key, JSON.stringify(saved));
    } catch {
      // A full or blocked storage only costs the reload its cursor.
    }
  }

  #forget(): void {
    try {
      this.#storage?.removeItem(this.#key);
    } catch {
      // as above
    }
  }
}

class RequestRefused extends Error {}

/** The run id a frame names: a `data-agent` frame's `data.runId`, or a top-level `runId`. */
function runIdOf(data: { runId?: string; data?: { runId?: string } } | null): string | null {
  if (!data || typeof data !== 'object') return null;
  if (typeof data.data?.runId === 'string') return data.data.runId;
  if (typeof data.runId === 'string') return data.runId;
  return null;
}

/** A frame that says the leg came to rest: a `data-agent` frame with a terminal state, or a `finish`/`result` part. */
function isTerminal(data: { type?: string; data?: { terminal?: unknown } } | null): boolean {
  if (!data || typeof data !== 'object') return false;
  if (data.type === 'data-agent' && data.data && data.data.terminal !== undefined && data.data.terminal !== null) return true;
  return data.type === 'finish' || data.type === 'result';
}

/** Parses an SSE body into frames: `id:` and `data:` lines, a blank line ends an event. */
export async function* readSse(body: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncGenerator<WireFrame, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let id: string | undefined;
  let data: string[] = [];
  const flush = (): WireFrame | undefined => {
    if (data.length === 0) {
      id = undefined;
      return undefined;
    }
    const text = data.join('\n');
    data = [];
    const frameId = id;
    id = undefined;
    if (text === '[DONE]') return undefined;
    try {
      return { ...(frameId !== undefined ? { id: frameId } : {}), data: JSON.parse(text) };
    } catch {
      return undefined;
    }
  };
  try {
    for (;;) {
      if (signal?.aborted) return;
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let newline: number;
      while ((newline = buffer.search(/\r?\n/)) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer[newline] === '\r' ? 2 : 1));
        if (line === '') {
          const frame = flush();
          if (frame) yield frame;
        } else if (line.startsWith(':')) continue;
        else {
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'data') data.push(value);
          else if (field === 'id') id = value;
        }
      }
    }
    const frame = flush();
    if (frame) yield frame;
  } finally {
    reader.releaseLock();
  }
}

function defaultStorage(): CursorStorage | null {
  try {
    const storage = (globalThis as { sessionStorage?: CursorStorage }).sessionStorage;
    return storage ?? null;
  } catch {
    return null;
  }
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

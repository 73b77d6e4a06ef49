/**
 * The object `streamAgent` returns: a lazily started run whose events are
 * buffered and replayed to every view, so views can be read concurrently,
 * one after another, or after the run ended, and each sees the whole run.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { serializeError } from '../errors/index.js';
import { scanPartialJson } from './partial-json.js';
import { RunViewBuilder, type AgentRunView, type RunViewSeed } from './run-view.js';
import type { AgentEvent, AgentResult } from './types.js';

/**
 * A native agent run as a stream. Nothing runs until `result` is read, a view
 * is iterated, or `consume()` is called; then the run starts once.
 *
 * Every view replays the run from its first event, whenever it is iterated.
 * Errors and warnings arrive as `error` and `warning` parts: iterating a
 * view never throws.
 *
 * @example
 * const stream = streamAgent({ model, prompt: 'Say hello.' });
 * for await (const delta of stream.textStream) process.stdout.write(delta);
 * const result = await stream.result;
 */
export interface AgentStream<T = string> {
  /** Every event of the run; the last is `{ type: 'result', result }`. */
  readonly events: AsyncIterable<AgentEvent<T>>;
  /** The text deltas of every model turn. */
  readonly textStream: AsyncIterable<string>;
  /**
   * Drafts of the structured output while the finalization turn writes it,
   * each different from the one before. A draft is unchecked data, never `T`:
   * a repair attempt starts over from an empty draft, and only `result`
   * carries the validated output.
   */
  readonly partialOutputStream: AsyncIterable<unknown>;
  /**
   * When the output is an array: each element once it is whole. Elements
   * belong to a finalization attempt: when a repair attempt starts, the
   * elements start over, so elements of an abandoned attempt may already
   * have been yielded. Only `result` validates the final value.
   */
  readonly elementStream: AsyncIterable<unknown>;
  /** The run's result. Rejects only when the engine itself failed (the stream then ends with an `error` part). */
  readonly result: Promise<AgentResult<T>>;
  /** Runs to the end without iterating anything; the events stay buffered for views read later. */
  consume(): Promise<AgentResult<T>>;
}

export interface AgentStreamOptions {
  /**
   * How the structured output arrives: as JSON text of the finalization turn,
   * as the arguments of the forced output tool, or not at all (no drafts, no
   * elements).
   * @default 'json'
   */
  outputMode?: 'json' | 'tool' | 'none';
  /**
   * Emit `agent-run-update` events, each carrying the run's view, after every
   * event that changes it. Without a seed the stream emits none.
   */
  runView?: RunViewSeed;
}

/**
 * The stream whose run is executing in the current async context. A stream
 * started inside it (a tool that runs a nested agent) is its child: its views
 * name the parent run and are also emitted on the parent's stream.
 */
interface RunFrame {
  runId(): string;
  forward(view: AgentRunView): void;
}
const currentRun = new AsyncLocalStorage<RunFrame>();

/** Starts the run. It emits events as they happen and ends by emitting `{ type: 'result' }`. */
export type AgentStreamStart<T> = (emit: (event: AgentEvent<T>) => void) => Promise<AgentResult<T>>;

/**
 * Wraps a run in an {@link AgentStream}. `start` is called on first use, once.
 *
 * The stream closes at the first `result` event; later events are dropped.
 * When `start` resolves without having emitted one, its value is emitted as
 * the result. When it rejects (or throws) first, the stream emits an `error`
 * part and closes, and `result` rejects with the error.
 *
 * @example
 * const stream = createAgentStream<string>(async (emit) => {
 *   const result = await runTheEngine(emit);
 *   emit({ type: 'result', result });
 *   return result;
 * });
 */
export function createAgentStream<T = string>(
  start: AgentStreamStart<T>,
  options: AgentStreamOptions = {},
): AgentStream<T> {
  return new BufferedAgentStream(start, options.outputMode ?? 'json', options.runView);
}

type OutputMode = NonNullable<AgentStreamOptions['outputMode']>;

class BufferedAgentStream<T> implements AgentStream<T> {
  readonly #start: AgentStreamStart<T>;
  readonly #outputMode: OutputMode;
  readonly #buffer: AgentEvent<T>[] = [];
  #started = false;
  #closed = false;
  /** Resolved (and replaced) whenever the buffer grows or the stream closes. */
  #pulse = deferred<void>();
  readonly #result = deferred<AgentResult<T>>();
  readonly #seed: RunViewSeed | undefined;
  #views: RunViewBuilder | undefined;
  #parent: RunFrame | undefined;

  constructor(start: AgentStreamStart<T>, outputMode: OutputMode, seed?: RunViewSeed) {
    this.#start = start;
    this.#outputMode = outputMode;
    this.#seed = seed;
    // A run nobody asks the result of must not surface as an unhandled rejection.
    this.#result.promise.catch(() => {});
  }

  get result(): Promise<AgentResult<T>> {
    this.#ensureStarted();
    return this.#result.promise;
  }

  consume(): Promise<AgentResult<T>> {
    return this.result;
  }

  get events(): AsyncIterable<AgentEvent<T>> {
    return this.#view(() => this.#replay());
  }

  get textStream(): AsyncIterable<string> {
    return this.#view(() => textDeltas(this.#replay()));
  }

  get partialOutputStream(): AsyncIterable<unknown> {
    const mode = this.#outputMode;
    return this.#view(() => drafts(this.#replay(), mode));
  }

  get elementStream(): AsyncIterable<unknown> {
    const mode = this.#outputMode;
    return this.#view(() => elements(this.#replay(), mode));
  }

  /** An iterable that starts the run when (and each time) it is iterated. */
  #view<V>(open: () => AsyncIterator<V>): AsyncIterable<V> {
    return {
      [Symbol.asyncIterator]: () => {
        this.#ensureStarted();
        return open();
      },
    };
  }

  async *#replay(): AsyncGenerator<AgentEvent<T>, void, undefined> {
    let next = 0;
    for (;;) {
      if (next < this.#buffer.length) {
        yield this.#buffer[next++]!;
      } else if (this.#closed) {
        return;
      } else {
        await this.#pulse.promise;
      }
    }
  }

  #ensureStarted(): void {
    if (this.#started) return;
    this.#started = true;
    let runId = '';
    if (this.#seed) {
      this.#parent = currentRun.getStore();
      const parentRunId = this.#seed.parentRunId ?? this.#parent?.runId() ?? null;
      this.#views = new RunViewBuilder({ ...this.#seed, parentRunId: parentRunId || null });
    }
    const frame: RunFrame = {
      runId: () => runId,
      forward: (view) => {
        if (this.#closed) return;
        this.#push({ type: 'agent-run-update', view });
        this.#parent?.forward(view);
      },
    };
    let running: Promise<AgentResult<T>>;
    try {
      running = Promise.resolve(currentRun.run(frame, () => this.#start((event) => {
        if (event.type === 'run-start') runId = event.runId;
        this.#emit(event);
      })));
    } catch (error) {
      running = Promise.reject(error);
    }
    running.then(
      (result) => {
        // The engine normally emits the result itself; if it did not, the return value stands in.
        if (!this.#closed) this.#emit({ type: 'result', result });
      },
      (error: unknown) => {
        // After a result event, the run's outcome is settled; a late rejection changes nothing.
        if (this.#closed) return;
        this.#push({ type: 'error', error: serializeError(error) });
        this.#close();
        this.#result.reject(error);
      },
    );
  }

  #emit(event: AgentEvent<T>): void {
    if (this.#closed) return;
    const view = this.#views?.apply(event as AgentEvent<unknown>);
    // The last view goes out before the result, which closes the stream.
    if (event.type !== 'result') this.#push(event);
    if (view) {
      this.#push({ type: 'agent-run-update', view });
      this.#parent?.forward(view);
    }
    if (event.type === 'result') {
      this.#push(event);
      this.#close();
      this.#result.resolve(event.result);
    }
  }

  #push(event: AgentEvent<T>): void {
    this.#buffer.push(event);
    this.#wake();
  }

  #close(): void {
    this.#closed = true;
    this.#wake();
  }

  #wake(): void {
    const pulse = this.#pulse;
    this.#pulse = deferred<void>();
    pulse.resolve();
  }
}

async function* textDeltas<T>(events: AsyncIterable<AgentEvent<T>>): AsyncGenerator<string, void, undefined> {
  for await (const event of events) {
    if (event.type === 'text-delta') yield event.delta;
  }
}

/** One reading of the output as it grows, per finalization attempt. */
interface OutputSnapshot {
  /** A new finalization attempt began: whatever came before is abandoned. */
  restart: boolean;
  value: unknown;
  /** How many leading elements of a top-level array are whole. */
  finishedElements: number;
}

/**
 * Follows the finalization steps and reads the output each time it grows.
 * In `json` mode the output is the text of the current finalization step; in
 * `tool` mode it is the arguments of a tool call made in that step (the forced
 * output tool, the only tool finalization offers in that mode).
 */
async function* outputSnapshots<T>(
  events: AsyncIterable<AgentEvent<T>>,
  mode: OutputMode,
): AsyncGenerator<OutputSnapshot, void, undefined> {
  if (mode === 'none') {
    for await (const _ of events); // keeps the view's lifetime the run's
    return;
  }
  let step: number | undefined;
  let text = '';
  for await (const event of events) {
    if (event.type === 'step-start') {
      step = event.phase === 'finalize' ? event.step : undefined;
      text = '';
      if (step !== undefined) yield { restart: true, value: undefined, finishedElements: 0 };
    } else if (step === undefined || !('step' in event) || event.step !== step) {
      continue;
    } else if (mode === 'json' && event.type === 'text-delta') {
      // Reads the whole text again on every delta: simple, and cheap for answers of a few kilobytes.
      text += event.delta;
      const scan = scanPartialJson(text);
      if (scan !== undefined) yield { restart: false, value: scan.value, finishedElements: scan.finishedElements };
    } else if (mode === 'tool' && event.type === 'tool-call-start') {
      const args = event.args;
      yield { restart: false, value: args, finishedElements: Array.isArray(args) ? args.length : 0 };
    }
  }
}

async function* drafts<T>(events: AsyncIterable<AgentEvent<T>>, mode: OutputMode): AsyncGenerator<unknown, void, undefined> {
  let last: string | undefined;
  for await (const snapshot of outputSnapshots(events, mode)) {
    if (snapshot.restart) {
      last = undefined;
      continue;
    }
    const key = JSON.stringify(snapshot.value);
    if (key === last) continue;
    last = key;
    yield snapshot.value;
  }
}

async function* elements<T>(events: AsyncIterable<AgentEvent<T>>, mode: OutputMode): AsyncGenerator<unknown, void, undefined> {
  let yielded = 0;
  for await (const snapshot of outputSnapshots(events, mode)) {
    if (snapshot.restart) {
      yielded = 0;
      continue;
    }
    if (!Array.isArray(snapshot.value)) continue;
    while (yielded < snapshot.finishedElements) yield snapshot.value[yielded++];
  }
}

interface Deferred<V> {
  promise: Promise<V>;
  resolve: (value: V) => void;
  reject: (error: unknown) => void;
}

function deferred<V>(): Deferred<V> {
  let resolve!: (value: V) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<V>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

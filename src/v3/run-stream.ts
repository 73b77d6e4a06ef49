/**
 * AgentStreamV3: an AgentStream (its views and `toAgentStreamResponse` see
 * exactly what a run's stream shows) with one more view, `eventsV3`, that
 * carries every event plus the V3 ones: `context`, `working-memory` (and,
 * reserved, `memory-intent`). The extra events never enter `events`, so none
 * of the compiled context reaches the wire.
 */
import { createAgentStream, type AgentStream, type AgentStreamOptions } from '../agent/stream.js';
import type { AgentEvent, AgentResult } from '../agent/types.js';
import type { AgentEventV3Extra } from './run-types.js';

export type AgentEventV3<T = string> = AgentEvent<T> | AgentEventV3Extra;

export interface AgentStreamV3<T = string> extends AgentStream<T> {
  /** Every event of `events`, in order, with the V3 events among them; the last is `{ type: 'result' }`. */
  readonly eventsV3: AsyncIterable<AgentEventV3<T>>;
}

type Start<T> = (emit: (event: AgentEvent<T>) => void, emitV3: (event: AgentEventV3Extra) => void) => Promise<AgentResult<T>>;

export function createAgentStreamV3<T>(start: Start<T>, options: AgentStreamOptions): AgentStreamV3<T> {
  const buffer: AgentEventV3<T>[] = [];
  let closed = false;
  let wake: (() => void) | null = null;
  const pulse = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  const push = (event: AgentEventV3<T>) => {
    if (closed) return;
    buffer.push(event);
    if (event.type === 'result') closed = true;
    pulse();
  };
  const base = createAgentStream<T>((emit) => {
    const run = start((event) => {
      push(event);
      emit(event);
    }, push);
    return run.finally(() => {
      closed = true;
      pulse();
    });
  }, options);
  const eventsV3: AsyncIterable<AgentEventV3<T>> = {
    async *[Symbol.asyncIterator]() {
      // Reading the view starts the run, as reading any view does.
      base.result.catch(() => undefined);
      let at = 0;
      for (;;) {
        while (at < buffer.length) yield buffer[at++]!;
        if (closed) return;
        await new Promise<void>((resolve) => {
          const previous = wake;
          wake = () => {
            previous?.();
            resolve();
          };
        });
      }
    },
  };
  Object.defineProperty(base, 'eventsV3', { get: () => eventsV3, enumerable: false });
  return base as AgentStreamV3<T>;
}

/**
 * AgentStreamV3: an AgentStream (its views and `toAgentStreamResponse` see
 * exactly what a run's stream shows) with one more view, `eventsV3`, that
 * carries every event of `events` plus the V3 ones: `context`,
 * `working-memory` (and, reserved, `memory-intent`). The extra events never
 * enter `events`, so none of the compiled context reaches the wire.
 *
 * `eventsV3` replays `events` and slips each V3 event in where it happened:
 * after the engine events emitted before it (and the run-view updates they
 * caused), before the next one.
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
  /** Each V3 event, with how many engine events were emitted before it. */
  const extras: Array<{ after: number; event: AgentEventV3Extra }> = [];
  let emitted = 0;
  const base = createAgentStream<T>((emit) => start((event) => {
    emitted++;
    emit(event);
  }, (event) => extras.push({ after: emitted, event })), options);
  const eventsV3: AsyncIterable<AgentEventV3<T>> = {
    async *[Symbol.asyncIterator]() {
      let seen = 0;
      let next = 0;
      for await (const event of base.events) {
        // Run-view updates (and an engine failure's error part) are the stream's own, not emitted by the engine.
        const own = event.type === 'agent-run-update' || (event.type === 'error' && seen === emitted);
        if (!own) {
          while (next < extras.length && extras[next]!.after <= seen) yield extras[next++]!.event;
          seen++;
        }
        yield event;
      }
      while (next < extras.length) yield extras[next++]!.event;
    },
  };
  Object.defineProperty(base, 'eventsV3', { get: () => eventsV3, enumerable: false });
  return base as AgentStreamV3<T>;
}

/**
 * The stream events of a leg's tool calls: each call is announced once when
 * the run dispatches it (a restored leg does not announce its open calls
 * again), and reported once when it ends, whichever of its final states it
 * reached. The run's own snapshots say which calls its batch holds; each
 * call's actor is then watched by a subscription of its own, so no inspector
 * sees every actor's every event.
 */
import type { Actor, SnapshotFrom } from 'xstate';
import type { runMachine, toolCallMachine, ToolCallEmitted } from '../../machines/index.js';
import type { AgentEvent, JsonValue } from '../agent/types.js';
import type { CallFacts, LegTracer } from '../tracing/leg-tracer.js';

type CallSnapshot = SnapshotFrom<typeof toolCallMachine>;

/**
 * Watches the calls of `actor`'s batches. `announced` and `reported` hold the
 * call ids already announced and reported (the host seeds `announced` with a
 * restored batch's calls).
 */
export function watchCalls(
  actor: Actor<typeof runMachine>,
  announced: Set<string>,
  reported: Set<string>,
  emit: (event: AgentEvent<unknown>) => void,
  tracer: LegTracer | null = null,
): void {
  const watched = new Set<string>();
  const reportEnd = (id: string, snapshot: CallSnapshot) => {
    if (snapshot.status !== 'done' || reported.has(id)) return;
    reported.add(id);
    const out = snapshot.output!;
    tracer?.callEnded(out.modelStep, out.toolCallId, callFacts(snapshot));
    emit({
      type: 'tool-call-end',
      step: out.modelStep,
      toolCallId: out.toolCallId,
      toolName: out.toolName,
      output: out.modelOutput as JsonValue,
      isError: out.isError,
      ...(out.outcome !== null && out.outcome !== 'unknown-effect' ? { outcome: out.outcome } : {}),
    });
  };
  actor.subscribe({
    next: (snapshot) => {
      for (const id of snapshot.context.batch) {
        if (watched.has(id)) continue;
        const child = snapshot.children[id as keyof typeof snapshot.children] as Actor<typeof toolCallMachine> | undefined;
        if (!child) continue;
        watched.add(id);
        if (!announced.has(id)) {
          announced.add(id);
          const c = child.getSnapshot().context;
          emit({ type: 'tool-call-start', step: c.modelStep, toolCallId: c.toolCallId, toolName: c.toolName, args: c.args as JsonValue });
        }
        // What a call announces comes from its transitions (an approval request, a client call, a warning).
        child.on('*', (event) => emit(event as ToolCallEmitted as AgentEvent<unknown>));
        // A call that already ended completes the observer at once, inside subscribe.
        child.subscribe({ complete: () => reportEnd(id, child.getSnapshot()), error: () => undefined });
      }
    },
    // The run's failures are handled where the leg waits for rest.
    error: () => undefined,
  });
}

/** Where a call stands, for its span: its state (`approval.waiting`, `completed`, ...) and its receipt's status. */
export function callFacts(snapshot: CallSnapshot): CallFacts & { step: number; toolCallId: string } {
  return {
    step: snapshot.context.modelStep,
    toolCallId: snapshot.context.toolCallId,
    stage: stateName(snapshot.value),
    receipt: (snapshot.output?.receipt ?? snapshot.context.receipt)?.status ?? 'none',
  };
}

function stateName(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    const [key, inner] = Object.entries(value)[0] ?? [];
    return key === undefined ? '' : inner === undefined ? key : `${key}.${stateName(inner)}`;
  }
  return String(value);
}

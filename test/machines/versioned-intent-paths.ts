/**
 * The paths of the versioned memory-intent chart and a driver for them,
 * shared by its model-based test and its restore test.
 *
 * @xstate/graph walks every simple path of the chart from each input (a
 * fresh extraction, a fresh tool write, and every stored entry a settle can
 * start from), with every answer its actors may give where the intent stands
 * (and, for a tool write, every event the run may send). `drive` runs the
 * real chart along one path with actors that answer as the path says and
 * records each call with its answer.
 */
import { getSimplePaths } from '@xstate/graph';
import { createActor, fromPromise, type AnyActorRef, type EventObject, type SnapshotFrom } from 'xstate';
import { versionedIntentMachine, intentEntryOf } from '../../machines/memory-intent-versioned.js';
import type { VersionedIntentEntry, VersionedIntentEvent, VersionedIntentInput } from '../../machines/memory-intent-versioned-types.js';

export type Snapshot = SnapshotFrom<typeof versionedIntentMachine>;
export type ActorName = 'claim' | 'saveIntent' | 'commit' | 'readReceipt';
const ACTORS: ActorName[] = ['claim', 'saveIntent', 'commit', 'readReceipt'];

const coded = (name: string, code: string, message: string) => Object.assign(new Error(message), { name, code });
export const DIGEST = 'sha256:d1';
export const claimOut = { messageIds: ['run-1:0', 'run-1:1'], requestDigest: DIGEST };
export const good = { requestDigest: DIGEST, planned: 2, scopeRevision: 7, committedAt: 1_000 };
export const other = { ...good, requestDigest: 'sha256:other' };
export const llmError = coded('MemoryError', 'memory_llm_invalid', 'The memory LLM answered no JSON.');
export const mismatch = coded('MemoryError', 'memory_receipt_mismatch', 'Another request committed under this operation id.');
export const storeDown = coded('StoreError', 'store_unavailable', 'The run store is down.');
export const memoryDown = new Error('connect ECONNREFUSED');

const done = (id: ActorName, output: unknown): EventObject => ({ type: `xstate.done.actor.${id}`, output } as EventObject);
const fail = (id: ActorName, error: unknown): EventObject => ({ type: `xstate.error.actor.${id}`, error } as EventObject);
const stateKey = (value: unknown) => typeof value === 'string' ? value : Object.entries(value as object).map(([k, v]) => `${k}.${String(v)}`)[0]!;

const runEvents = (...events: VersionedIntentEvent[]): EventObject[] => events;

/** What may happen where the intent stands. */
function events(s: Snapshot): EventObject[] {
  switch (stateKey(s.value)) {
    case 'extract.intended': return [done('claim', claimOut), fail('claim', memoryDown)];
    case 'extract.claiming':
    case 'extract.acknowledging':
    case 'extract.failing':
    case 'extract.stalling': return [done('saveIntent', undefined), fail('saveIntent', storeDown)];
    case 'extract.planned': return [
      done('commit', { receipt: good, replayed: false }), done('commit', { receipt: good, replayed: true }),
      done('commit', { receipt: other, replayed: true }), fail('commit', llmError), fail('commit', mismatch),
    ];
    case 'extract.reading': return [done('readReceipt', good), done('readReceipt', other), done('readReceipt', null), fail('readReceipt', memoryDown)];
    case 'tool.intended': return runEvents(
      { type: 'EXECUTED', receipt: good }, { type: 'EXECUTED', receipt: other },
      { type: 'FAILED', error: { name: 'ToolError', message: 'The tool threw.' } },
    );
    case 'tool.committed': return runEvents({ type: 'COMPLETED' }, { type: 'FAILED', error: { name: 'ProjectionError', code: 'projection_failed', message: 'No projection.' } });
    default: return [];
  }
}

const entry = (status: VersionedIntentEntry['status'], fields: Partial<VersionedIntentEntry> = {}, kind: 'extract' | 'tool' = 'extract'): VersionedIntentEntry =>
  ({ operationId: 'op-1', kind, status, ...fields });
const claimed = { messageIds: claimOut.messageIds, requestDigest: DIGEST };
const receiptFields = { requestDigest: DIGEST, planned: 2, receipt: { scopeRevision: 7, committedAt: 1_000 } };

/** Every input the chart starts from: fresh ones, and each stored entry a reconciliation or a resume may hand it. */
export const inputs: { name: string; input: VersionedIntentInput }[] = [
  { name: 'extract fresh', input: { operationId: 'op-1', kind: 'extract' } },
  { name: 'tool fresh', input: { operationId: 'op-1', kind: 'tool' } },
  { name: 'extract stored intended', input: { operationId: 'op-1', kind: 'extract', stored: entry('intended') } },
  { name: 'extract stored planned', input: { operationId: 'op-1', kind: 'extract', stored: entry('planned', claimed) } },
  { name: 'extract stored planned with an error', input: { operationId: 'op-1', kind: 'extract', stored: entry('planned', { ...claimed, error: { name: 'MemoryError', code: 'memory_llm_invalid', message: 'x' } }) } },
  { name: 'extract stored planned, no claim', input: { operationId: 'op-1', kind: 'extract', stored: entry('planned') } },
  { name: 'extract stored committed', input: { operationId: 'op-1', kind: 'extract', stored: entry('committed', { ...claimed, ...receiptFields }) } },
  { name: 'extract stored committed, no receipt', input: { operationId: 'op-1', kind: 'extract', stored: entry('committed', claimed) } },
  { name: 'extract stored acknowledged', input: { operationId: 'op-1', kind: 'extract', stored: entry('acknowledged', { ...claimed, ...receiptFields }) } },
  { name: 'extract stored failed', input: { operationId: 'op-1', kind: 'extract', stored: entry('failed', { ...claimed, error: { name: 'MemoryError', code: 'memory_receipt_mismatch', message: 'x' } }) } },
  { name: 'tool stored intended with a digest', input: { operationId: 'op-1', kind: 'tool', stored: entry('intended', { requestDigest: DIGEST }, 'tool') } },
  { name: 'tool stored committed', input: { operationId: 'op-1', kind: 'tool', stored: entry('committed', receiptFields, 'tool') } },
  { name: 'tool stored acknowledged', input: { operationId: 'op-1', kind: 'tool', stored: entry('acknowledged', receiptFields, 'tool') } },
];

const never = () => fromPromise(() => new Promise<never>(() => undefined));
const model = versionedIntentMachine.provide({ actors: Object.fromEntries(ACTORS.map((a) => [a, never()])) as never });

export interface IntentPath {
  name: string;
  input: VersionedIntentInput;
  /** The events of the path in order: actor answers (done / error) and the run's events. */
  events: EventObject[];
  end: string;
  label: string;
}

const short = (e: EventObject) => e.type.replace('xstate.done.actor.', '').replace('xstate.error.actor.', '!');
export const paths: IntentPath[] = inputs.flatMap(({ name, input }) =>
  getSimplePaths(model, {
    input,
    events,
    serializeState: (s: Snapshot) => JSON.stringify({ v: s.value, s: s.status, c: s.context }),
    stopWhen: (s: Snapshot) => s.status !== 'active',
  } as never)
    .filter((p) => (p.state as Snapshot).status === 'done')
    .map((p) => ({
      name, input, events: p.steps.map((s) => s.event).filter((e) => !e.type.startsWith('xstate.init')),
      end: stateKey((p.state as Snapshot).value),
    }))
    .map((p) => ({ ...p, label: `${p.name}: ${p.events.map(short).join(' → ') || 'start'} ⇒ ${p.end}` })));

export type Call = { actor: ActorName; input: Record<string, unknown>; answer: { output: unknown } | { error: unknown }; entryAtCall: VersionedIntentEntry };

export interface Drive {
  actor: AnyActorRef & { getSnapshot(): Snapshot };
  calls: Call[];
  /** Resolves when the chart is done. */
  done: Promise<void>;
  /** True once the chart rests where `stopAfter` stopped it: an actor that never answers was called, or a run event is held back. */
  resting(): boolean;
  /** The call that was held (never answered), if any. */
  held(): Call | undefined;
}

const isAnswer = (e: EventObject) => e.type.startsWith('xstate.done.actor.') || e.type.startsWith('xstate.error.actor.');

/**
 * Runs the chart along `events`: each actor answers the next answer (it must
 * be its own), and each run event is sent once the chart rests where it
 * handles it. `stopAfter` answers: the next actor never answers (the chart
 * rests there). `snapshot` restores instead of starting from `input`.
 */
export function drive(path: Pick<IntentPath, 'input' | 'events'>, options: {
  stopAfter?: number; snapshot?: unknown; inspect?: (e: unknown) => void;
} = {}): Drive {
  const queue = [...path.events];
  const calls: Call[] = [];
  let answered = 0;
  let held: Call | undefined;
  // Forward reference: the actors read the parent's snapshot when they are called.
  let parent: { getSnapshot(): Snapshot } | undefined;
  const act = (name: ActorName) => fromPromise(async ({ input }: { input: Record<string, unknown> }) => {
    await new Promise((r) => setTimeout(r, 0));
    const entryAtCall = intentEntryOf(parent!.getSnapshot());
    if (options.stopAfter !== undefined && answered >= options.stopAfter) {
      held = { actor: name, input, answer: { output: undefined }, entryAtCall };
      return new Promise<never>(() => undefined);
    }
    const event = queue.shift() as (EventObject & { output?: unknown; error?: unknown }) | undefined;
    if (!event || !isAnswer(event) || !event.type.endsWith(`.${name}`)) throw new Error(`unexpected call of ${name} (next: ${event?.type})`);
    answered += 1;
    const failed = event.type.startsWith('xstate.error');
    calls.push({ actor: name, input, answer: failed ? { error: event.error } : { output: event.output }, entryAtCall });
    if (failed) throw event.error;
    return event.output;
  });
  const logic = versionedIntentMachine.provide({ actors: Object.fromEntries(ACTORS.map((a) => [a, act(a)])) as never });
  const actor = createActor(logic, {
    input: path.input,
    ...(options.snapshot ? { snapshot: options.snapshot as Snapshot } : {}),
    ...(options.inspect ? { inspect: options.inspect } : {}),
  });
  parent = actor;
  const done = new Promise<void>((resolve, reject) => actor.subscribe({ complete: resolve, error: reject }));
  // The run's events go in as soon as the chart rests in a state that takes them.
  const pump = () => {
    while (queue.length > 0 && !isAnswer(queue[0]!) && actor.getSnapshot().status === 'active') {
      if (options.stopAfter !== undefined && answered >= options.stopAfter) return;
      answered += 1;
      actor.send(queue.shift() as never);
    }
  };
  actor.subscribe(() => pump());
  actor.start();
  pump();
  const resting = () => {
    if (held) return true;
    const snap = actor.getSnapshot();
    if (snap.status !== 'active') return true;
    const next = queue[0];
    return answered === options.stopAfter && next !== undefined && !isAnswer(next) && snap.can(next as never);
  };
  return { actor: actor as Drive['actor'], calls, done, resting, held: () => held };
}

/** Waits until `predicate` holds (the chart's actors answer after a macrotask). */
export async function until(predicate: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i += 1) {
    if (predicate()) return;
    await new Promise((r) => setTimeout(r, 1));
  }
  throw new Error(`timed out waiting for ${what}`);
}

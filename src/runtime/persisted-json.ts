/**
 * A machine actor's persisted snapshot as plain JSON, made in one walk: what
 * `toJson(actor.getPersistedSnapshot())` gives, without building XState's
 * persisted form first. XState's own walk copies the snapshot's fields,
 * walks every value of each context looking for actor references (a run's
 * holds none), and asks each child for its persisted snapshot; the JSON
 * copy then walks all of it again. Here each part is copied once, and a
 * child machine's part is made the same way.
 *
 * The shape is XState 5's (getPersistedSnapshot in its machine logic): the
 * snapshot's own fields other than the ones it leaves out, then `context`
 * and `children`, with the history value reduced to state node ids. An
 * actor reference inside a context is written as JSON writes it, through
 * the actor's `toJSON`, which gives what XState's walk puts in its place.
 * A child of a logic other than XState's own StateMachine class (a promise,
 * a subclass) is persisted by XState and copied. A child whose logic
 * was given inline (no string `src` to restore it from) is refused with the
 * error XState's development build throws for it.
 * test/runtime/persisted-json.test.ts holds the two ways equal on real runs.
 */
import { StateMachine, type AnyActorRef } from 'xstate';
import { toJson } from '../agent/json.js';

/** The snapshot fields XState's persisted form leaves out (getters and references, not state). */
const LEFT_OUT = new Set(['_nodes', 'tags', 'machine', 'children', 'context', 'can', 'hasTag', 'matches', 'getMeta', 'toJSON']);

interface MachineSnapshotLike {
  context: unknown;
  children: Record<string, AnyActorRef | undefined>;
  historyValue?: unknown;
  [key: string]: unknown;
}

interface ChildActor extends AnyActorRef {
  systemId?: string;
  _syncSnapshot?: unknown;
}

/** XState's history value as it persists it: each entry's state nodes by id. */
function historyJson(historyValue: unknown): Record<string, { id: string }[]> {
  const out: Record<string, { id: string }[]> = {};
  if (typeof historyValue !== 'object' || historyValue === null) return out;
  for (const key in historyValue) {
    const nodes = (historyValue as Record<string, unknown>)[key];
    if (Array.isArray(nodes)) out[key] = nodes.map((node: { id: string }) => ({ id: node.id }));
  }
  return out;
}

/** Sets `key` to `value` as JSON would write the property: left out when JSON leaves it out (undefined, a function, a symbol). */
function put(target: Record<string, unknown>, key: string, value: unknown): void {
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return;
  target[key] = typeof value === 'string' ? value : toJson(value);
}

/** One child's persisted snapshot as JSON. */
function childJson(child: AnyActorRef): unknown {
  const logic = (child as { logic?: unknown }).logic;
  // A StateMachine itself, not a subclass that may persist otherwise (its methods are bound per instance, so the
  // method itself cannot be compared with the prototype's).
  if (logic !== null && typeof logic === 'object' && Object.getPrototypeOf(logic) === StateMachine.prototype) {
    return machineJson(child.getSnapshot() as MachineSnapshotLike);
  }
  return toJson(child.getPersistedSnapshot());
}

/**
 * The persisted form of a machine snapshot as JSON; `context`, when given, stands in for the snapshot's own (a
 * caller that keeps parts of the context out of the copy passes the rest).
 */
export function machineJson(snapshot: MachineSnapshotLike, context: unknown = snapshot.context): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(snapshot)) {
    if (LEFT_OUT.has(key)) continue;
    if (key === 'historyValue') {
      out[key] = historyJson(snapshot.historyValue);
      continue;
    }
    put(out, key, snapshot[key]);
  }
  out.context = toJson(context);
  const children: Record<string, unknown> = {};
  for (const id in snapshot.children) {
    const child = snapshot.children[id] as ChildActor | undefined;
    if (!child) continue;
    // XState's development build refuses such a child too; its production build writes one no restore could read.
    if (typeof child.src !== 'string') throw new Error('An inline child actor cannot be persisted.');
    const entry: Record<string, unknown> = { snapshot: childJson(child), src: child.src };
    put(entry, 'systemId', child.systemId);
    put(entry, 'syncSnapshot', child._syncSnapshot);
    children[id] = entry;
  }
  out.children = children;
  if (!('historyValue' in out)) out.historyValue = historyJson(undefined);
  return out;
}

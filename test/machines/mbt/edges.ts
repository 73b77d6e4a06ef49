/**
 * The transitions of a machine, read from its live StateNode tree, and a key
 * for each one that is the same in `machine.provide(...)` copies of it (they
 * rebuild the tree, so identity cannot be used).
 *
 * One edge per transition definition: every `on` / invoke `onDone` / `onError`
 * branch (each guarded candidate of an array is its own edge) and every
 * `always` branch. Imports nothing from xstate at run time, so the recorder
 * that uses it can be installed inside a `vi.mock('xstate')` factory.
 */
import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition } from 'xstate';

export interface Edge {
  /** `source|event|index`: stable across `provide` copies of the machine. */
  key: string;
  source: string;
  /** Event descriptor; `always` for eventless transitions. */
  event: string;
  /** Position among the candidates for this event in the source state. */
  index: number;
  guard: string;
  /** Target state ids; `[]` for a targetless (internal) transition. */
  targets: string[];
  /** `source --event [guard]--> target`, for reports. */
  label: string;
}

function guardName(guard: unknown): string {
  if (guard === undefined) return '';
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') {
    const g = guard as { name?: string; guards?: unknown[] };
    if (Array.isArray(g.guards)) return `${g.name || 'combined'}(${g.guards.map(guardName).join(', ')})`;
    return g.name && g.name !== 'guard' ? g.name : 'inline';
  }
  if (typeof guard === 'object' && guard !== null && 'type' in guard) return String((guard as { type: unknown }).type);
  return 'inline';
}

const shortEvent = (event: string) =>
  event.replace('xstate.done.actor.', 'done:').replace('xstate.error.actor.', 'error:').replace('xstate.snapshot.', 'snapshot:');

function edgeOf(source: AnyStateNode, event: string, index: number, t: AnyTransitionDefinition): Edge {
  const targets = (t.target ?? []).map((n: AnyStateNode) => n.id);
  const guard = guardName(t.guard);
  const label = `${source.id} --${shortEvent(event)}${guard ? ` [${guard}]` : ''}#${index}--> ${targets.length ? targets.join(',') : '(internal)'}`;
  return { key: `${source.id}|${event}|${index}`, source: source.id, event, index, guard, targets, label };
}

/** Every transition of the machine, in document order. */
export function allEdges(machine: AnyStateMachine): Edge[] {
  const out: Edge[] = [];
  const walk = (node: AnyStateNode) => {
    for (const [event, defs] of node.transitions) defs.forEach((t, i) => out.push(edgeOf(node, event, i, t)));
    (node.always ?? []).forEach((t, i) => out.push(edgeOf(node, 'always', i, t)));
    for (const child of Object.values(node.states ?? {})) walk(child as AnyStateNode);
  };
  walk(machine.root);
  return out;
}

/** The edge a taken transition definition is. */
export function edgeOfTransition(t: AnyTransitionDefinition): Edge {
  const source = t.source as AnyStateNode;
  if (t.eventType === '') return edgeOf(source, 'always', (source.always ?? []).indexOf(t), t);
  return edgeOf(source, t.eventType, (source.transitions.get(t.eventType) ?? []).indexOf(t), t);
}

/** The machine (root id) a state id belongs to. */
export const machineOf = (stateId: string) => stateId.split('.')[0]!;

/**
 * The walk of a machine's `StateNode` tree that every chart of it is drawn from (Mermaid, DOT,
 * the stored-run HTML page): each state with its label lines, each transition with its label and
 * targets, and the highlighted states. Internal to cairn/machines: the drawings are the API.
 */
import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition, StateValue } from 'xstate';
import { CairnError } from '../errors/index.js';

/** What is highlighted: state paths, `#id`s, or a state value (see `ChartOptions.highlight`). */
export type Highlight = readonly string[] | StateValue;

export type StateKind = AnyStateNode['type'];

/** One drawn state: a leaf box, or a block (compound, parallel, or the machine itself). */
export interface ChartState {
  readonly node: AnyStateNode;
  readonly kind: StateKind;
  readonly parent: ChartState | undefined;
  readonly children: ChartState[];
  /** Unique id made of `[A-Za-z0-9_]`, valid in Mermaid and DOT. */
  id: string;
  /** First line is the state's name; then invoked actors, entry actions, internal events, tags. */
  readonly lines: string[];
  current: boolean;
}

export interface ChartEdge {
  readonly from: ChartState;
  readonly to: ChartState;
  /** `EVENT [guard]`, as every chart prints it. */
  readonly label: string;
  /** The label's two parts: the event (`done: callModel`, `after 5ms`, `always`) and the guard's text, if any. */
  readonly event: string;
  readonly guard: string | undefined;
  /** A targetless transition: it runs its actions (or only stops the event from bubbling) and stays. */
  readonly internal: boolean;
}

export interface Chart {
  readonly root: ChartState;
  /** The machine itself is drawn as a block only when it has something to show (own transitions, invokes, regions). */
  readonly drawRoot: boolean;
  /** The transitions with a target, one per target: the arrows of Mermaid and DOT. */
  readonly edges: ChartEdge[];
  /**
   * Every transition of the machine, in definition order: those of `edges`, and each targetless
   * one as an internal edge from its state to itself (Mermaid and DOT list some of these in the
   * state's box instead, and skip the ones with no actions).
   */
  readonly transitions: ChartEdge[];
  readonly states: ChartState[];
  readonly newId: (wanted: string) => string;
}

// ---------------------------------------------------------------------------------------------
// Walking the machine

export function buildChart(machine: AnyStateMachine, options: { highlight?: Highlight }): Chart {
  const newId = idAllocator();
  const states: ChartState[] = [];
  const byNode = new Map<AnyStateNode, ChartState>();

  const make = (node: AnyStateNode, parent: ChartState | undefined): ChartState => {
    const state: ChartState = { node, kind: node.type, parent, children: [], id: '', lines: [], current: false };
    states.push(state);
    byNode.set(node, state);
    if (parent) state.id = newId(node.path.join('_'));
    for (const child of Object.values(node.states)) state.children.push(make(child, state));
    return state;
  };
  const root = make(machine.root, undefined);
  // The machine's own id is taken last so that its states keep their plain names.
  root.id = newId(machine.id);

  const transitions: ChartEdge[] = [];
  for (const state of states) {
    const { node } = state;
    const actorNames = invokedActorNames(node);
    state.lines.push(title(state, machine), ...invokeLines(node, actorNames), ...entryLines(node));
    for (const transition of transitionsOf(node)) {
      const { event, guard } = transitionLabel(transition, actorNames);
      const label = guard === undefined ? event : `${event} [${guard}]`;
      const targets = transition.target ?? [];
      if (targets.length === 0) {
        transitions.push({ from: state, to: state, label, event, guard, internal: true });
        // A targetless transition runs its actions and stays: listed in the box (UML's internal
        // transitions) rather than drawn as a self-loop, which renderers draw poorly on blocks.
        // One with no actions either only stops the event from bubbling: not worth a line.
        if (transition.actions.length > 0 || transition.reenter) state.lines.push(`↺ ${label}`);
        continue;
      }
      for (const target of targets) {
        const to = byNode.get(target);
        if (!to) throw new CairnError('internal', `toMermaid/toDot: transition target #${target.id} is not in machine "${machine.id}"`);
        transitions.push({ from: state, to, label, event, guard, internal: false });
      }
    }
    if (node.tags.length > 0) state.lines.push(`«${node.tags.join(', ')}»`);
  }

  for (const node of highlightedNodes(machine, options.highlight)) {
    for (let s = byNode.get(node); s?.parent; s = s.parent) s.current = true;
  }

  const edges = transitions.filter((t) => !t.internal);
  const touchesRoot = edges.some((e) => e.from === root || e.to === root);
  const drawRoot = root.kind !== 'compound' || root.lines.length > 1 || touchesRoot;
  return { root, drawRoot, edges, transitions, states: states.filter((s) => s !== root || drawRoot), newId };
}

/** The states a block starts in: the initial child of a compound state (none for a parallel one). */
export function initialTargets(block: ChartState, chart: Chart): ChartState[] {
  if (block.kind !== 'compound') return [];
  const targets = block.node.initial?.target ?? [];
  return targets.map((t) => chart.states.find((s) => s.node === t)).filter((s): s is ChartState => s !== undefined);
}

/** `on` (and onDone, invoke results, `after`) in definition order, then the eventless `always` ones. */
function transitionsOf(node: AnyStateNode): AnyTransitionDefinition[] {
  return [...[...node.transitions.values()].flat(), ...(node.always ?? [])];
}

function title(state: ChartState, machine: AnyStateMachine): string {
  const name = state.parent ? state.node.key : machine.id;
  if (state.kind === 'parallel') return `${name} (parallel)`;
  if (state.kind === 'history') return `${name} (${state.node.history === 'deep' ? 'deep history' : 'history'})`;
  return name;
}

/**
 * How each invoked actor is called in `done: <name>` labels: its explicit id, else its `src`.
 * (XState's generated ids look like `0.machine.state` and mean nothing to a reader.)
 */
function invokedActorNames(node: AnyStateNode): Map<string, string> {
  const configs = toList<{ id?: unknown; src?: unknown }>(node.config.invoke);
  const names = new Map<string, string>();
  node.invoke.forEach((def, i) => {
    const config = configs[i];
    const explicitId = typeof config?.id === 'string';
    names.set(def.id, explicitId ? def.id : typeof config?.src === 'string' ? config.src : 'inline');
  });
  return names;
}

function invokeLines(node: AnyStateNode, names: Map<string, string>): string[] {
  const configs = toList<{ src?: unknown }>(node.config.invoke);
  return node.invoke.map((def, i) => {
    const src = typeof configs[i]?.src === 'string' ? String(configs[i]?.src) : 'inline';
    const name = names.get(def.id) ?? def.id;
    return name === src ? `invoke: ${src}` : `invoke: ${src} as ${name}`;
  });
}

/** Named entry actions and spawned children; built-ins (assign, raise, timers) are noise on a chart. */
function entryLines(node: AnyStateNode): string[] {
  const names: string[] = [];
  for (const action of node.entry as unknown[]) {
    if (typeof action === 'string') names.push(action);
    else if (action !== null && (typeof action === 'object' || typeof action === 'function')) {
      const { type, src } = action as { type?: unknown; src?: unknown };
      if (type === 'xstate.spawnChild' && typeof src === 'string') names.push(`spawn ${src}`);
      else if (typeof type === 'string' && !type.startsWith('xstate.')) names.push(type);
    }
  }
  return names.length > 0 ? [`entry: ${names.join(', ')}`] : [];
}

function transitionLabel(transition: AnyTransitionDefinition, actorNames: Map<string, string>): { event: string; guard: string | undefined } {
  const event = eventText(transition, actorNames);
  let guard: unknown = transition.guard;
  if (transition.eventType === 'xstate.route') guard = userRouteGuard(guard);
  return { event, guard: guard === undefined ? undefined : guardText(guard) };
}

function eventText(transition: AnyTransitionDefinition, actorNames: Map<string, string>): string {
  const type = transition.eventType;
  if (type === '') return 'always';
  const delay = (transition as { delay?: unknown }).delay;
  if (type.startsWith('xstate.after.') && delay !== undefined) {
    return `after ${typeof delay === 'number' ? `${delay}ms` : String(delay)}`;
  }
  const actor = /^xstate\.(done|error)\.actor\.(.+)$/.exec(type) ?? /^xstate\.(snapshot)\.(.+)$/.exec(type);
  if (actor) return `${actor[1]}: ${actorNames.get(actor[2] ?? '') ?? actor[2]}`;
  if (type.startsWith('xstate.done.state.')) return 'done';
  if (type === 'xstate.route') return 'route';
  return type;
}

/** A guard's name; `guard` for an inline function; XState's higher-order guards spelled out. */
function guardText(guard: unknown): string {
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function' || (typeof guard === 'object' && guard !== null)) {
    const g = guard as { type?: unknown; check?: unknown; guards?: unknown[]; stateValue?: unknown; name?: unknown };
    if (typeof g.check === 'function') {
      const inner = (g.guards ?? []).map(guardText);
      if (g.name === 'and' || g.name === 'or') return `${g.name}(${inner.join(', ')})`;
      if (g.name === 'not') return `not(${inner.join(', ')})`;
      if (g.name === 'stateIn') return `in(${stateValueText(g.stateValue)})`;
    }
    if (typeof g.type === 'string') return g.type + paramsText((g as { params?: unknown }).params);
  }
  return 'guard';
}

/** A parameterized guard shows its parameters: `outputIs(aborted)`, `within(max=3, of=steps)`. */
function paramsText(params: unknown): string {
  if (params === null || typeof params !== 'object') return '';
  const entries = Object.entries(params as Record<string, unknown>).filter(([, v]) => ['string', 'number', 'boolean'].includes(typeof v));
  if (entries.length === 0) return '';
  if (entries.length === 1) return `(${String(entries[0]![1])})`;
  return `(${entries.map(([k, v]) => `${k}=${String(v)}`).join(', ')})`;
}

/** XState wraps a route's guard as `and([matchesRoute, userGuard])`: show only the user's part. */
function userRouteGuard(guard: unknown): unknown {
  const g = guard as { name?: unknown; guards?: unknown[] } | undefined;
  return typeof guard === 'function' && g?.name === 'and' && g.guards?.length === 2 ? g.guards[1] : undefined;
}

function stateValueText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null) return statePaths(value as StateValue).join(', ');
  return '?';
}

// ---------------------------------------------------------------------------------------------
// Highlight

function highlightedNodes(machine: AnyStateMachine, highlight: Highlight | undefined): AnyStateNode[] {
  if (highlight === undefined) return [];
  const paths = isPathList(highlight) ? highlight : statePaths(highlight);
  return paths.map((path) => resolvePath(machine, path));
}

function isPathList(value: readonly string[] | StateValue): value is readonly string[] {
  return Array.isArray(value);
}

/**
 * A state value as dotted paths: `"a"` → `["a"]`; `{ loop: 'awaitingTools', ui: { panel: {} } }` →
 * `['loop.awaitingTools', 'ui.panel']`. Anything that is not a state value reads as none.
 */
export function statePaths(value: unknown, prefix = ''): string[] {
  if (typeof value === 'string') return [prefix + value];
  if (value === null || typeof value !== 'object') return prefix ? [prefix.slice(0, -1)] : [];
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return prefix ? [prefix.slice(0, -1)] : [];
  return entries.flatMap(([key, child]) => statePaths(child, `${prefix}${key}.`));
}

function resolvePath(machine: AnyStateMachine, path: string): AnyStateNode {
  const unknown = (cause?: unknown) =>
    new CairnError('invalid_options', `highlight: "${path}" is not a state of machine "${machine.id}"`, {
      fault: 'user',
      cause,
    });
  if (path.startsWith('#')) {
    try {
      return machine.getStateNodeById(path);
    } catch (error) {
      throw unknown(error);
    }
  }
  let node: AnyStateNode = machine.root;
  for (const key of path === '' ? [] : path.split('.')) {
    const child = Object.hasOwn(node.states, key) ? node.states[key] : undefined;
    if (!child) throw unknown();
    node = child;
  }
  return node;
}

// ---------------------------------------------------------------------------------------------
// Ids

/**
 * Ids: Mermaid ids allow no dots, hyphens or spaces, and a few words are keywords of its lexer
 * (an id that merely starts with `click`, `href` or `default` is misread). Kept unique by suffix.
 */
function idAllocator(): (wanted: string) => string {
  const taken = new Set<string>();
  const reserved = /^(?:click|href|default|acctitle|accdescr)|^(?:state|note|class|classdef|style|scale|direction|end)$/i;
  return (wanted) => {
    let base = wanted.replace(/[^A-Za-z0-9_]/g, '_') || 'state';
    if (reserved.test(base)) base = `s_${base}`;
    let id = base;
    for (let n = 2; taken.has(id); n++) id = `${base}_${n}`;
    taken.add(id);
    return id;
  };
}

function toList<T>(value: unknown): T[] {
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]) as T[];
}

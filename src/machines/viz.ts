/**
 * Draw any XState v5 machine as a Mermaid `stateDiagram-v2` or a Graphviz DOT graph, optionally
 * with the states a run stands in highlighted.
 *
 * Both are drawn from the live `StateNode` tree, not from `machine.toJSON()`: the JSON definition
 * drops `always` transitions and inline guards (and `@xstate/graph` misses the same edges), so a
 * chart made from it would hide exactly the eventless routing a reader needs to follow a run.
 */
import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition, StateValue } from 'xstate';
import { CairnError } from '../errors/index.js';

/** Options of {@link toMermaid} and {@link toDot}. */
export interface ChartOptions {
  /**
   * Where a run stands: state paths relative to the machine (`'loop.awaitingTools'`), state ids
   * (`'#toolCall.executing'`), or a state value such as `snapshot.value`. These states and their
   * ancestors are highlighted (Mermaid: class `current`; DOT: filled). An unknown path throws a
   * `CairnError` with code `invalid_options`.
   * @default undefined (nothing highlighted)
   */
  highlight?: readonly string[] | StateValue;
}

type StateKind = AnyStateNode['type'];

/** One drawn state: a leaf box, or a block (compound, parallel, or the machine itself). */
interface ChartState {
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

interface ChartEdge {
  readonly from: ChartState;
  readonly to: ChartState;
  readonly label: string;
}

interface Chart {
  readonly root: ChartState;
  /** The machine itself is drawn as a block only when it has something to show (own transitions, invokes, regions). */
  readonly drawRoot: boolean;
  readonly edges: ChartEdge[];
  readonly states: ChartState[];
  readonly newId: (wanted: string) => string;
}

/**
 * Mermaid `stateDiagram-v2` source for a machine: compound states as nested blocks, parallel
 * regions separated by `--`, every transition labelled (`EVENT [guard]`, `always`,
 * `done: <actor>`, `error: <actor>`, `after 5000ms`), invoked actors, entry actions, tags and
 * targetless (internal) transitions listed in the state's box.
 *
 * @example
 * ```ts
 * import { toMermaid } from 'cairn/machines';
 * const source = toMermaid(machine, { highlight: snapshot.value });
 * ```
 */
export function toMermaid(machine: AnyStateMachine, options: ChartOptions = {}): string {
  const chart = buildChart(machine, options);
  const out = ['stateDiagram-v2'];

  const emitContents = (block: ChartState, indent: string): void => {
    for (const target of initialTargets(block, chart)) out.push(`${indent}[*] --> ${target.id}`);
    block.children.forEach((child, i) => {
      // Mermaid's concurrency separator: each region of a parallel state gets its own lane.
      if (block.kind === 'parallel' && i > 0) out.push(`${indent}--`);
      emitState(child, indent);
    });
  };
  const emitState = (state: ChartState, indent: string): void => {
    const label = state.lines.map(mermaidText).join('<br/>');
    if (state.children.length > 0) {
      out.push(`${indent}state "${label}" as ${state.id} {`);
      emitContents(state, `${indent}  `);
      out.push(`${indent}}`);
    } else {
      out.push(`${indent}state "${label}" as ${state.id}`);
    }
    if (state.kind === 'final') out.push(`${indent}${state.id} --> [*]`);
  };

  if (chart.drawRoot) emitState(chart.root, '  ');
  else emitContents(chart.root, '  ');
  // Edges go last, at the top level, so that a transition crossing blocks never re-parents a state.
  for (const edge of chart.edges) out.push(`  ${edge.from.id} --> ${edge.to.id} : ${mermaidText(edge.label)}`);

  const current = chart.states.filter((s) => s.current).map((s) => s.id);
  if (current.length > 0) {
    out.push('  classDef current fill:#ffe066,stroke:#e8590c,stroke-width:3px,color:#000');
    out.push(`  class ${current.join(',')} current`);
  }
  return `${out.join('\n')}\n`;
}

/**
 * Graphviz DOT source for a machine, with the same labels as {@link toMermaid}: compound and
 * parallel states are clusters (regions dashed), final states have a double border, and an
 * edge to or from a compound state is clipped at its cluster.
 *
 * @example
 * ```ts
 * import { toDot } from 'cairn/machines';
 * writeFileSync('run.dot', toDot(machine, { highlight: ['loop.awaitingTools'] }));
 * // dot -Tsvg run.dot > run.svg
 * ```
 */
export function toDot(machine: AnyStateMachine, options: ChartOptions = {}): string {
  const chart = buildChart(machine, options);
  const out = [
    `digraph ${dotString(machine.id)} {`,
    '  compound=true;',
    '  rankdir=TB;',
    '  fontname="Helvetica";',
    '  node [shape=box, style=rounded, fontname="Helvetica"];',
    '  edge [fontname="Helvetica", fontsize=10];',
  ];
  // An edge cannot end on a cluster, so each block gets an invisible point to aim at (the edge
  // is then clipped at the cluster border), and each compound state a visible initial point.
  const anchors = new Map<ChartState, string>();
  const starts = new Map<ChartState, string>();
  for (const state of chart.drawRoot ? chart.states : [chart.root, ...chart.states]) {
    if (state.children.length === 0) continue;
    if (state !== chart.root || chart.drawRoot) anchors.set(state, chart.newId(`${state.id}__anchor`));
    if (state.kind === 'compound') starts.set(state, chart.newId(`${state.id}__start`));
  }
  const anchorOf = (state: ChartState): string => anchors.get(state) ?? state.id;
  const edges: string[] = [];
  const pushEdge = (tail: string, from: ChartState | undefined, to: ChartState, label: string): void => {
    const attrs = label === '' ? [] : [`label=${dotString(label)}`];
    // Clip at the cluster border, unless one end lies inside the other's cluster (Graphviz refuses that).
    if (from && from.children.length > 0 && !isWithin(to, from)) attrs.push(`ltail=${dotString(`cluster_${from.id}`)}`);
    if (to.children.length > 0 && !(from && isWithin(from, to))) attrs.push(`lhead=${dotString(`cluster_${to.id}`)}`);
    const suffix = attrs.length > 0 ? ` [${attrs.join(', ')}]` : '';
    edges.push(`${dotString(tail)} -> ${dotString(anchorOf(to))}${suffix};`);
  };

  const emitContents = (block: ChartState, indent: string): void => {
    const anchor = anchors.get(block);
    const start = starts.get(block);
    if (anchor !== undefined) {
      out.push(`${indent}${dotString(anchor)} [shape=point, label="", style=invis, width=0.01];`);
    }
    if (start !== undefined) {
      out.push(`${indent}${dotString(start)} [shape=point, label="", width=0.15];`);
      for (const target of initialTargets(block, chart)) pushEdge(start, undefined, target, '');
    }
    for (const child of block.children) emitState(child, indent);
  };
  const emitState = (state: ChartState, indent: string): void => {
    const label = dotString(state.lines.join('\n'));
    if (state.children.length > 0) {
      const style = state.parent?.kind === 'parallel' ? 'rounded,dashed' : 'rounded';
      out.push(`${indent}subgraph ${dotString(`cluster_${state.id}`)} {`);
      out.push(`${indent}  label=${label};`);
      out.push(
        state.current
          ? `${indent}  style="${style},filled"; fillcolor="#fff9db"; color="#e8590c"; penwidth=2;`
          : `${indent}  style="${style}";`,
      );
      emitContents(state, `${indent}  `);
      out.push(`${indent}}`);
      return;
    }
    const attrs = [`label=${label}`];
    if (state.kind === 'final') attrs.push('peripheries=2');
    if (state.current) attrs.push('style="rounded,filled"', 'fillcolor="#ffe066"', 'color="#e8590c"', 'penwidth=2');
    out.push(`${indent}${dotString(state.id)} [${attrs.join(', ')}];`);
  };

  if (chart.drawRoot) emitState(chart.root, '  ');
  else emitContents(chart.root, '  ');
  for (const edge of chart.edges) pushEdge(anchorOf(edge.from), edge.from, edge.to, edge.label);
  out.push(...edges.map((line) => `  ${line}`), '}');
  return `${out.join('\n')}\n`;
}

/** True when `state` is `block` or lies inside it. */
function isWithin(state: ChartState, block: ChartState): boolean {
  for (let s: ChartState | undefined = state; s; s = s.parent) if (s === block) return true;
  return false;
}

// ---------------------------------------------------------------------------------------------
// Walking the machine

function buildChart(machine: AnyStateMachine, options: ChartOptions): Chart {
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

  const edges: ChartEdge[] = [];
  for (const state of states) {
    const { node } = state;
    const actorNames = invokedActorNames(node);
    state.lines.push(title(state, machine), ...invokeLines(node, actorNames), ...entryLines(node));
    for (const transition of transitionsOf(node)) {
      const label = transitionLabel(transition, actorNames);
      const targets = transition.target ?? [];
      if (targets.length === 0) {
        // A targetless transition runs its actions and stays: listed in the box (UML's internal
        // transitions) rather than drawn as a self-loop, which renderers draw poorly on blocks.
        // One with no actions either only stops the event from bubbling: not worth a line.
        if (transition.actions.length > 0 || transition.reenter) state.lines.push(`↺ ${label}`);
        continue;
      }
      for (const target of targets) {
        const to = byNode.get(target);
        if (!to) throw new CairnError('internal', `toMermaid/toDot: transition target #${target.id} is not in machine "${machine.id}"`);
        edges.push({ from: state, to, label });
      }
    }
    if (node.tags.length > 0) state.lines.push(`«${node.tags.join(', ')}»`);
  }

  for (const node of highlightedNodes(machine, options.highlight)) {
    for (let s = byNode.get(node); s?.parent; s = s.parent) s.current = true;
  }

  const touchesRoot = edges.some((e) => e.from === root || e.to === root);
  const drawRoot = root.kind !== 'compound' || root.lines.length > 1 || touchesRoot;
  return { root, drawRoot, edges, states: states.filter((s) => s !== root || drawRoot), newId };
}

/** The states a block starts in: the initial child of a compound state (none for a parallel one). */
function initialTargets(block: ChartState, chart: Chart): ChartState[] {
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

function transitionLabel(transition: AnyTransitionDefinition, actorNames: Map<string, string>): string {
  const event = eventText(transition, actorNames);
  let guard: unknown = transition.guard;
  if (transition.eventType === 'xstate.route') guard = userRouteGuard(guard);
  return guard === undefined ? event : `${event} [${guardText(guard)}]`;
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
  if (typeof value === 'object' && value !== null) return stateValuePaths(value as StateValue).join(', ');
  return '?';
}

// ---------------------------------------------------------------------------------------------
// Highlight

function highlightedNodes(machine: AnyStateMachine, highlight: ChartOptions['highlight']): AnyStateNode[] {
  if (highlight === undefined) return [];
  const paths = isPathList(highlight) ? highlight : stateValuePaths(highlight);
  return paths.map((path) => resolvePath(machine, path));
}

function isPathList(value: readonly string[] | StateValue): value is readonly string[] {
  return Array.isArray(value);
}

/** `{ loop: 'awaitingTools', ui: { panel: {} } }` → `['loop.awaitingTools', 'ui.panel']`. */
function stateValuePaths(value: StateValue, prefix = ''): string[] {
  if (typeof value === 'string') return [`${prefix}${value}`];
  return Object.entries(value).flatMap(([key, child]) =>
    child === undefined || (typeof child === 'object' && Object.keys(child).length === 0)
      ? [`${prefix}${key}`]
      : stateValuePaths(child, `${prefix}${key}.`),
  );
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
// Text

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

const MERMAID_ENTITIES: Record<string, string> = {
  '#': '#35;',
  '"': '#quot;',
  ';': '#59;',
  ':': '#colon;',
  '<': '#lt;',
  '>': '#gt;',
  '%': '#37;',
};

/**
 * Text safe inside a Mermaid label. Colons are entities because Mermaid before 11.13 ends a
 * label at a second `:`; `;`, `#`, `%%` and quotes would end or comment out the line.
 */
function mermaidText(text: string): string {
  return text
    .replace(/\s+/g, ' ')
    .replace(/[#";:<>%]/g, (ch) => MERMAID_ENTITIES[ch] ?? ch)
    .replace(/(direction)\s+(?=tb|bt|rl|lr)/gi, '$1#32;'); // `direction TB` anywhere on a line is a directive
}

function dotString(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\r?\n/g, '\\n')}"`;
}

function toList<T>(value: unknown): T[] {
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]) as T[];
}

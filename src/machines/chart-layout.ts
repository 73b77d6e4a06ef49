/**
 * A machine laid out as a diagram: every state a box at a position (a compound state's children
 * inside its box), every transition an arrow along a route with its label placed, and a start dot
 * for each initial state. Drawn from the same walk of the `StateNode` tree as the Mermaid, DOT
 * and text charts (chart-model.ts), laid out by ELK's layered algorithm (chart-layout-elk.ts).
 *
 * The layout depends on the machine only, never on a run: it is made once per machine and
 * process, and the same machine always gets the same geometry (ELK is deterministic for one
 * input, and the input is built in definition order). Text is measured as monospace characters,
 * which is how the SVG draws it, so no font metrics are needed.
 */
import type { AnyStateMachine } from 'xstate';
import { CairnError } from '../errors/index.js';
import { elkLayout, type ElkEdge, type ElkLabel, type ElkNode, type ElkPoint } from './chart-layout-elk.js';
import { buildChart, initialTargets, type Chart, type ChartState, type StateKind } from './chart-model.js';

export interface DiagramPoint {
  readonly x: number;
  readonly y: number;
}

export interface DiagramBox {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

/** A state's box. `path` is its dotted path; the machine itself (drawn when it has transitions of its own) has path `''`. */
export interface DiagramState extends DiagramBox {
  readonly path: string;
  readonly kind: StateKind;
  /** Its name (with `(parallel)` or `(history)` when it is one). */
  readonly name: string;
  /** Grey lines under the name: actors it invokes, entry actions, tags. */
  readonly notes: readonly string[];
  /** Whether it is its parent's initial state. */
  readonly initial: boolean;
  readonly children: readonly DiagramState[];
}

/** One transition's arrow: from a state to a target (the same state for a self-loop or a targetless one). */
export interface DiagramTransition {
  /** Its place in the machine's definition order (unique in the diagram). */
  readonly index: number;
  readonly from: string;
  readonly to: string;
  /** `EVENT [guard]`, as every chart of Cairn prints it. */
  readonly label: string;
  readonly event: string;
  readonly guard: string | undefined;
  /** A targetless transition: it stays in its state (drawn as a dashed loop). */
  readonly internal: boolean;
  /** The route, from the source's border to the target's; the arrowhead goes at the last point. */
  readonly points: readonly DiagramPoint[];
  readonly labelBox: DiagramBox;
}

/** The start dot of a compound state (or of the machine, `of: ''`) and its arrow to the initial state. */
export interface DiagramInitial {
  readonly of: string;
  readonly to: string;
  readonly dot: DiagramPoint;
  readonly points: readonly DiagramPoint[];
}

export interface Diagram {
  readonly machineId: string;
  readonly width: number;
  readonly height: number;
  /** The top-level boxes (the machine's own box alone, when it is drawn). */
  readonly states: readonly DiagramState[];
  readonly transitions: readonly DiagramTransition[];
  readonly initials: readonly DiagramInitial[];
}

// Text metrics of the SVG's monospace fonts (chart-svg.ts draws with these sizes).
export const NAME_FONT = 12;
export const NOTE_FONT = 10;
export const LABEL_FONT = 10;
const CHAR = 0.61; // a monospace character's advance, in em, with a little room for the widest fonts
export const NAME_LINE = 16;
export const NOTE_LINE = 13;
export const LABEL_LINE = 12;
const PAD = 8;
const DOT = 10;
const ARROW_GAP = 9;

const textWidth = (text: string, size: number): number => Math.ceil([...text].length * size * CHAR);
const LABEL_WRAP = 28;

/**
 * The lines an arrow's label is drawn in: the event, then the guard, a long guard broken after
 * its commas (a narrower label keeps the layers of the diagram narrower).
 */
export function labelLines(t: { event: string; guard: string | undefined }): string[] {
  if (t.guard === undefined) return [t.event];
  const lines: string[] = [];
  let line = '';
  for (const part of `[${t.guard}]`.split(/(?<=, )/)) {
    if (line !== '' && line.length + part.length > LABEL_WRAP) {
      lines.push(line.trimEnd());
      line = '';
    }
    line += part;
  }
  return [t.event, ...lines, line];
}

const cache = new WeakMap<AnyStateMachine, Diagram>();

/** The machine laid out (made on the first call for a machine, then reused). */
export function layoutMachine(machine: AnyStateMachine): Diagram {
  const known = cache.get(machine);
  if (known) return known;
  const diagram = layout(machine);
  cache.set(machine, diagram);
  return diagram;
}

const pathOf = (state: ChartState): string => state.node.path.join('.');
const notesOf = (state: ChartState): string[] => state.lines.slice(1).filter((line) => !line.startsWith('↺ '));

function layout(machine: AnyStateMachine): Diagram {
  const chart = buildChart(machine, {});
  const initialChildren = new Set<ChartState>();
  const initialEdges: { of: ChartState; to: ChartState; dotId: string; edgeId: string }[] = [];

  const startDot = (block: ChartState): ElkNode[] => {
    const [target] = initialTargets(block, chart);
    if (!target) return [];
    initialChildren.add(target);
    const n = initialEdges.length;
    initialEdges.push({ of: block, to: target, dotId: `#init_${n}`, edgeId: `#init_edge_${n}` });
    return [{ id: `#init_${n}`, width: DOT, height: DOT }];
  };

  // Arrows meet a leaf on the sides across the flow (the flow runs left to right): a leaf with
  // many arrows in or out gets the height to space their ends apart, instead of a pile of heads.
  const ends = new Map<ChartState, { in: number; out: number }>();
  for (const t of chart.transitions) {
    if (t.internal) continue;
    const from = ends.get(t.from) ?? { in: 0, out: 0 };
    from.out++;
    ends.set(t.from, from);
    const to = ends.get(t.to) ?? { in: 0, out: 0 };
    to.in++;
    ends.set(t.to, to);
  }

  const node = (state: ChartState): ElkNode => {
    const name = state.lines[0] ?? state.node.key;
    const notes = notesOf(state);
    const head = NAME_LINE + notes.length * NOTE_LINE;
    const wide = Math.max(textWidth(name, NAME_FONT), ...notes.map((n) => textWidth(n, NOTE_FONT)));
    if (state.children.length === 0) {
      const most = Math.max(ends.get(state)?.in ?? 0, ends.get(state)?.out ?? 0);
      return { id: state.id, width: Math.max(64, wide + 2 * PAD), height: Math.max(30, head + 2 * PAD - 2, most * ARROW_GAP) };
    }
    return {
      id: state.id,
      // Room for the name and notes above the children; ELK grows the box around them.
      layoutOptions: { 'elk.padding': `[top=${head + PAD + 6},left=${PAD + 4},bottom=${PAD + 4},right=${PAD + 4}]`, 'elk.nodeSize.minimum': `(${wide + 2 * PAD}, ${head + 20})`, 'elk.nodeSize.constraints': 'MINIMUM_SIZE' },
      children: [...startDot(state), ...state.children.map(node)],
    };
  };

  // The states' ids are made of [A-Za-z0-9_] (chart-model.ts); the other ids start with '#', so none collide.
  const top = chart.drawRoot ? [node(chart.root)] : [...startDot(chart.root), ...chart.root.children.map(node)];
  const edges: ElkEdge[] = chart.transitions.map((t, i) => ({
    id: `#t_${i}`,
    sources: [t.from.id],
    targets: [t.to.id],
    labels: [label(t)],
  }));
  for (const init of initialEdges) edges.push({ id: init.edgeId, sources: [init.dotId], targets: [init.to.id] });

  const laid = elkLayout({ id: '#diagram', layoutOptions: ROOT_OPTIONS, children: top, edges });
  return toDiagram(machine, chart, laid, initialChildren, initialEdges);
}

function label(t: { event: string; guard: string | undefined }): ElkLabel {
  const lines = labelLines(t);
  return { text: lines.join('\n'), width: Math.max(...lines.map((l) => textWidth(l, LABEL_FONT))) + 4, height: lines.length * LABEL_LINE + 2 };
}

const ROOT_OPTIONS: Record<string, string> = {
  'elk.algorithm': 'layered',
  'elk.direction': 'RIGHT',
  'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
  'elk.edgeRouting': 'ORTHOGONAL',
  // Every coordinate in the answer is absolute, so nested boxes need no transforms.
  'elk.json.shapeCoords': 'ROOT',
  'elk.json.edgeCoords': 'ROOT',
  'elk.randomSeed': '1',
  'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES',
  'elk.spacing.nodeNode': '24',
  'elk.layered.spacing.nodeNodeBetweenLayers': '28',
  'elk.spacing.edgeEdge': '10',
  'elk.layered.spacing.edgeEdgeBetweenLayers': '8',
  'elk.spacing.edgeLabel': '3',
  'elk.spacing.edgeNode': '12',
  'elk.padding': '[top=12,left=12,bottom=12,right=12]',
};

const round = (n: number | undefined): number => Math.round((n ?? 0) * 10) / 10;
const point = (p: ElkPoint): DiagramPoint => ({ x: round(p.x), y: round(p.y) });

function toDiagram(
  machine: AnyStateMachine, chart: Chart, laid: ElkNode, initialChildren: Set<ChartState>,
  initialEdges: { of: ChartState; to: ChartState; dotId: string; edgeId: string }[],
): Diagram {
  const nodes = new Map<string, ElkNode>();
  const edges = new Map<string, ElkEdge>();
  const collect = (n: ElkNode) => {
    nodes.set(n.id, n);
    for (const e of n.edges ?? []) edges.set(e.id, e);
    for (const c of n.children ?? []) collect(c);
  };
  collect(laid);
  const missing = (what: string) => new CairnError('internal', `chart layout of machine "${machine.id}": ELK left out ${what}`);

  const state = (s: ChartState): DiagramState => {
    const n = nodes.get(s.id);
    if (!n) throw missing(`state ${pathOf(s) || machine.id}`);
    return {
      path: pathOf(s), kind: s.kind, name: s.lines[0] ?? s.node.key, notes: notesOf(s), initial: initialChildren.has(s),
      x: round(n.x), y: round(n.y), width: round(n.width), height: round(n.height),
      children: s.children.map(state),
    };
  };
  const route = (id: string): DiagramPoint[] => {
    const sections = edges.get(id)?.sections ?? [];
    const points = sections.flatMap((s) => [s.startPoint, ...(s.bendPoints ?? []), s.endPoint]).map(point);
    if (points.length < 2) throw missing(`the route of ${id}`);
    // Consecutive sections share their joint: keep it once.
    return points.filter((p, i) => i === 0 || p.x !== points[i - 1]!.x || p.y !== points[i - 1]!.y);
  };

  const transitions = chart.transitions.map((t, index): DiagramTransition => {
    const placed = edges.get(`#t_${index}`)?.labels?.[0];
    if (!placed) throw missing(`the label of transition ${t.label}`);
    return {
      index, from: pathOf(t.from), to: pathOf(t.to), label: t.label, event: t.event, guard: t.guard, internal: t.internal,
      points: route(`#t_${index}`),
      labelBox: { x: round(placed.x), y: round(placed.y), width: round(placed.width), height: round(placed.height) },
    };
  });
  const initials = initialEdges.map((init): DiagramInitial => {
    const dot = nodes.get(init.dotId);
    if (!dot) throw missing(`the start dot of ${pathOf(init.of) || machine.id}`);
    return { of: pathOf(init.of), to: pathOf(init.to), dot: { x: round((dot.x ?? 0) + DOT / 2), y: round((dot.y ?? 0) + DOT / 2) }, points: route(init.edgeId) };
  });

  const tops = chart.drawRoot ? [chart.root] : chart.root.children;
  return { machineId: machine.id, width: round(laid.width), height: round(laid.height), states: tops.map(state), transitions, initials };
}

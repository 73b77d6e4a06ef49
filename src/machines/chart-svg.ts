/**
 * A laid-out machine (chart-layout.ts) as static inline SVG for the stored-run page: nested
 * boxes for the states, an arrow with its `EVENT [guard]` label for every transition, a start dot
 * for each initial state, and the states a run is in marked. No script, no font, no reference to
 * anything outside the element (arrowheads are drawn as polygons, not markers), so the page stays
 * self-contained; every text is escaped.
 *
 * Made for tests to read as well as people: each state is a `<g data-node="<dotted path>">`
 * (nested as the states are), marked `data-mark="current"` or `data-mark="active"` (a state
 * containing a current one); each transition is a `<g class="edge" data-edge="<n>">` with
 * `data-from`, `data-to`, `data-event`, `data-guard` and `data-label`.
 */
import type { AnyStateMachine } from 'xstate';
import { CairnError } from '../errors/index.js';
import { escapeHtml as esc } from './chart-boxes.js';
import {
  labelLines, layoutMachine, LABEL_FONT, LABEL_LINE, NAME_FONT, NAME_LINE, NOTE_FONT, NOTE_LINE,
  type Diagram, type DiagramPoint, type DiagramState, type DiagramTransition,
} from './chart-layout.js';

export interface DiagramSvgOptions {
  /** Prefix of the element ids in this drawing (unique on the page: `run`, `chart-call-0`). */
  key: string;
  /** The active states, as dotted paths: marked `data-mark="current"`, the states containing them `data-mark="active"`. */
  current: readonly string[];
}

/** The machine's diagram as one `<svg>` element, with `options.current` marked. */
export function machineSvg(machine: AnyStateMachine, options: DiagramSvgOptions): string {
  const diagram = layoutMachine(machine);
  const marks = marksOf(diagram, options.current);
  const titleId = `${options.key}--diagram-title`;
  const states = diagram.states.map((s) => stateSvg(s, marks)).join('');
  const initials = diagram.initials.map((i) =>
    `<g class="initial" data-initial-of="${esc(i.of)}" data-to="${esc(i.to)}"><circle cx="${i.dot.x}" cy="${i.dot.y}" r="5"/>${routeSvg(i.points)}</g>`).join('');
  const edges = diagram.transitions.map(edgeSvg).join('');
  return [
    `<svg class="diagram-svg" data-machine="${esc(diagram.machineId)}" viewBox="0 0 ${diagram.width} ${diagram.height}" width="${diagram.width}" height="${diagram.height}" role="img" aria-labelledby="${esc(titleId)}">`,
    `<title id="${esc(titleId)}">${esc(summary(diagram))}</title>`,
    `<g class="states">${states}</g>`,
    `<g class="initials">${initials}</g>`,
    `<g class="transitions">${edges}</g>`,
    '</svg>',
  ].join('');
}

function summary(diagram: Diagram): string {
  let count = 0;
  const walk = (s: DiagramState) => {
    if (s.path !== '') count++;
    s.children.forEach(walk);
  };
  diagram.states.forEach(walk);
  return `Statechart of machine ${diagram.machineId}: ${count} states, ${diagram.transitions.length} transitions`;
}

/** `current` for the given paths, `active` for the states that contain one (not the machine's own box). */
function marksOf(diagram: Diagram, current: readonly string[]): Map<string, 'current' | 'active'> {
  const paths = new Set<string>();
  const walk = (s: DiagramState) => {
    paths.add(s.path);
    s.children.forEach(walk);
  };
  diagram.states.forEach(walk);
  const marks = new Map<string, 'current' | 'active'>();
  for (const path of current) {
    if (path === '' || !paths.has(path)) {
      throw new CairnError('invalid_options', `highlight: "${path}" is not a state of machine "${diagram.machineId}"`, { fault: 'user' });
    }
    const keys = path.split('.');
    for (let n = keys.length - 1; n > 0; n--) {
      const ancestor = keys.slice(0, n).join('.');
      if (marks.get(ancestor) !== 'current') marks.set(ancestor, 'active');
    }
  }
  for (const path of current) marks.set(path, 'current');
  return marks;
}

function stateSvg(state: DiagramState, marks: Map<string, 'current' | 'active'>): string {
  const mark = marks.get(state.path);
  const attrs = [
    `class="node ${state.kind}"`,
    `data-node="${esc(state.path)}"`,
    `data-kind="${esc(state.kind)}"`,
    ...(state.initial ? ['data-initial="true"'] : []),
    ...(mark ? [`data-mark="${mark}"`] : []),
  ];
  const { x, y, width, height } = state;
  const compound = state.children.length > 0;
  const shapes = [`<rect class="box" x="${x}" y="${y}" width="${width}" height="${height}" rx="${compound ? 8 : 6}"/>`];
  // A final state has a double border.
  if (state.kind === 'final') shapes.push(`<rect class="inner" x="${x + 3}" y="${y + 3}" width="${width - 6}" height="${height - 6}" rx="4"/>`);
  const textX = compound ? x + 10 : x + width / 2;
  const anchor = compound ? 'start' : 'middle';
  let baseline = y + 8 + NAME_FONT;
  const texts = [`<text class="name" x="${textX}" y="${baseline}" text-anchor="${anchor}" font-size="${NAME_FONT}">${esc(state.name)}</text>`];
  // Above the box's right corner, so the box keeps the size it was laid out with.
  if (mark === 'current') texts.push(`<text class="now" x="${x + width}" y="${y - 3}" text-anchor="end" font-size="${NOTE_FONT}">now</text>`);
  baseline += NAME_LINE - NAME_FONT + NOTE_FONT;
  for (const note of state.notes) {
    texts.push(`<text class="note" x="${textX}" y="${baseline}" text-anchor="${anchor}" font-size="${NOTE_FONT}">${esc(note)}</text>`);
    baseline += NOTE_LINE;
  }
  const children = state.children.map((c) => stateSvg(c, marks)).join('');
  return `<g ${attrs.join(' ')}>${shapes.join('')}${texts.join('')}${children}</g>`;
}

function edgeSvg(t: DiagramTransition): string {
  const attrs = [
    'class="edge"',
    `data-edge="${t.index}"`,
    `data-from="${esc(t.from)}"`,
    `data-to="${esc(t.to)}"`,
    `data-event="${esc(t.event)}"`,
    ...(t.guard === undefined ? [] : [`data-guard="${esc(t.guard)}"`]),
    `data-label="${esc(t.label)}"`,
    ...(t.internal ? ['data-internal="true"'] : []),
  ];
  const box = t.labelBox;
  const lines = labelLines(t);
  const text = lines.map((line, i) => `<tspan x="${box.x + 2}" y="${round(box.y + 1 + LABEL_FONT + i * LABEL_LINE - 1)}">${esc(line)}</tspan>`).join('');
  return `<g ${attrs.join(' ')}><title>${esc(t.label)}</title>${routeSvg(t.points)}<rect class="label-bg" x="${box.x}" y="${box.y}" width="${box.width}" height="${box.height}"/><text class="label" font-size="${LABEL_FONT}">${text}</text></g>`;
}

const round = (n: number): number => Math.round(n * 10) / 10;

/** The route as a path, and an arrowhead pointing along its last segment. */
function routeSvg(points: readonly DiagramPoint[]): string {
  const d = points.map((p, i) => `${i === 0 ? 'M' : 'L'}${p.x} ${p.y}`).join(' ');
  const end = points[points.length - 1]!;
  const before = points[points.length - 2]!;
  const length = Math.hypot(end.x - before.x, end.y - before.y) || 1;
  const ux = (end.x - before.x) / length;
  const uy = (end.y - before.y) / length;
  const size = 7;
  const back = { x: end.x - ux * size, y: end.y - uy * size };
  const left = `${round(back.x - uy * size * 0.45)},${round(back.y + ux * size * 0.45)}`;
  const right = `${round(back.x + uy * size * 0.45)},${round(back.y - ux * size * 0.45)}`;
  return `<path d="${d}"/><polygon class="head" points="${end.x},${end.y} ${left} ${right}"/>`;
}

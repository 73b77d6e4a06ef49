/**
 * A machine drawn as nested HTML boxes, for the stored-run page: each state a box named by its
 * key, a compound state's children inside it, and under each state the transitions it takes,
 * one a line (`EVENT [guard] → target`, the target a link to its box; `EVENT [guard] ↺ stays`
 * for a targetless one). Drawn from the same walk of the `StateNode` tree as the Mermaid and DOT
 * charts and the laid-out diagram above it on the page, so they never disagree.
 *
 * The page keeps this text below each diagram: find-in-page reaches it, it prints, and it reads
 * in source order without the SVG.
 */
import type { AnyStateMachine } from 'xstate';
import { buildChart, initialTargets, type ChartEdge, type ChartState } from './chart-model.js';

/** `&`, `<`, `>`, `"` and `'` as entities: safe in text and in quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ENTITIES[ch] ?? ch);
}
const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export interface BoxesOptions {
  /** Prefix of the element ids in this chart (unique on the page: `run`, `call-0`). */
  key: string;
  /** The active states, as dotted paths: marked `data-current="true"`, their ancestors `data-active="true"`. */
  current: readonly string[];
}

const pathOf = (state: ChartState): string => state.node.path.join('.');

/** The id of a state's box: `<key>--<dotted path>`. */
export const boxId = (key: string, path: string): string => `${key}--${path}`;

/** The chart of `machine` as nested boxes; every state box carries `data-state="<dotted path>"`. */
export function machineBoxesHtml(machine: AnyStateMachine, options: BoxesOptions): string {
  const chart = buildChart(machine, { highlight: options.current });
  const current = new Set(options.current);
  const edgesFrom = new Map<ChartState, ChartEdge[]>();
  for (const edge of chart.transitions) edgesFrom.set(edge.from, [...(edgesFrom.get(edge.from) ?? []), edge]);

  const transitions = (state: ChartState): string => {
    const edges = edgesFrom.get(state) ?? [];
    if (edges.length === 0) return '';
    const items = edges.map((edge) => {
      if (edge.internal) return `<li><span class="event">${escapeHtml(edge.label)}</span> ↺ <span class="stays">stays</span></li>`;
      const target = pathOf(edge.to);
      const shown = target === '' ? machine.id : target;
      return `<li><span class="event">${escapeHtml(edge.label)}</span> → <a class="target" href="#${escapeHtml(boxId(options.key, target))}">${escapeHtml(shown)}</a></li>`;
    });
    return `<ul class="transitions">${items.join('')}</ul>`;
  };

  const box = (state: ChartState, initial: boolean): string => {
    const path = pathOf(state);
    const attrs = [
      `class="state ${state.kind}"`,
      `id="${escapeHtml(boxId(options.key, path))}"`,
      `data-state="${escapeHtml(path)}"`,
      `data-kind="${escapeHtml(state.kind)}"`,
    ];
    if (current.has(path)) attrs.push('data-current="true"');
    else if (state.current) attrs.push('data-active="true"');
    const badges = [
      initial ? '<span class="badge">initial</span>' : '',
      state.kind === 'final' ? '<span class="badge">final</span>' : '',
      current.has(path) ? '<span class="badge now">now</span>' : '',
    ].join('');
    // The title line says "(parallel)" or "(history)" itself; the rest are invokes, entry actions, internal events, tags.
    const [name = state.node.key, ...lines] = state.lines;
    // Targetless transitions are listed with the others, not as notes.
    const notes = lines.filter((line) => !line.startsWith('↺ '));
    const noteList = notes.length > 0 ? `<ul class="notes">${notes.map((n) => `<li>${escapeHtml(n)}</li>`).join('')}</ul>` : '';
    return `<div ${attrs.join(' ')}><div class="name">${escapeHtml(name)}${badges}</div>${noteList}${transitions(state)}${children(state)}</div>`;
  };

  const children = (block: ChartState): string => {
    if (block.children.length === 0) return '';
    const initials = new Set(initialTargets(block, chart));
    return `<div class="states${block.kind === 'parallel' ? ' regions' : ''}">${block.children.map((c) => box(c, initials.has(c))).join('')}</div>`;
  };

  const root = chart.root;
  const rootNotes = root.lines.slice(1).filter((n) => !n.startsWith('↺ ')).map((n) => `<li>${escapeHtml(n)}</li>`).join('');
  const rootTransitions = transitions(root);
  const anyState = rootTransitions === '' && rootNotes === ''
    ? ''
    : `<div class="any-state"><div class="name">In any state of ${escapeHtml(machine.id)}</div>${rootNotes ? `<ul class="notes">${rootNotes}</ul>` : ''}${rootTransitions}</div>`;
  return `<div class="machine" data-machine="${escapeHtml(machine.id)}">${anyState}${children(root)}</div>`;
}

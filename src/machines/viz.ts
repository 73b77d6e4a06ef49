/**
 * Draw any XState v5 machine as a Mermaid `stateDiagram-v2` or a Graphviz DOT graph, optionally
 * with the states a run stands in highlighted.
 *
 * Both are drawn from the live `StateNode` tree, not from `machine.toJSON()`: the JSON definition
 * drops `always` transitions and inline guards (and `@xstate/graph` misses the same edges), so a
 * chart made from it would hide exactly the eventless routing a reader needs to follow a run.
 */
import type { AnyStateMachine, StateValue } from 'xstate';
import { buildChart, initialTargets, type ChartState } from './chart-model.js';

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
// Text

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

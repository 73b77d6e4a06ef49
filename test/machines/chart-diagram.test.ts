/**
 * The laid-out diagrams of the stored-run page (layoutMachine, machineSvg): every transition of a
 * machine becomes exactly one arrow with its `EVENT [guard]` label, from the border of its
 * source's box to the border of its target's, with its label beside it; compound states are boxes
 * nested as the states are; the states a run is in are marked; and the same machine always gets
 * the same drawing. Checked on the run and tool-call machines and on a small machine with the
 * shapes those two lack (parallel regions, history, self-loops, delays, arrows into and out of
 * nested states). The page in a browser is test/browser/chart-diagram.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { setup, type AnyStateMachine, type AnyStateNode, type AnyTransitionDefinition } from 'xstate';
import { runMachine, toolCallMachine } from 'cairn/machines';
import { labelLines, layoutMachine, type Diagram, type DiagramPoint, type DiagramState } from '../../src/machines/chart-layout.js';
import { machineSvg } from '../../src/machines/chart-svg.js';

const shapes = setup({
  types: {} as { events: { type: 'GO' } | { type: 'BACK' } | { type: 'PING' } | { type: 'STAY' } | { type: 'RESET' } | { type: 'JUMP' } },
  guards: { ready: () => true, allowed: () => true },
  actions: { note: () => undefined },
  delays: { soon: 5 },
}).createMachine({
  id: 'shapes',
  initial: 'idle',
  on: { RESET: '.idle' },
  states: {
    idle: { on: { GO: { target: 'work', guard: 'ready' }, PING: { target: 'idle', reenter: true }, STAY: {}, JUMP: '#deep' } },
    work: {
      type: 'parallel',
      on: { BACK: 'idle' },
      states: {
        left: {
          initial: 'a',
          states: {
            a: { on: { GO: 'b' }, after: { soon: 'b' } },
            b: { always: { target: 'a', guard: 'allowed' }, on: { PING: { actions: 'note' } } },
            past: { type: 'history', history: 'deep' },
          },
        },
        right: { initial: 'c', states: { c: { id: 'deep', on: { BACK: '#shapes.done' } } } },
      },
    },
    // Named like the layout's own ids for start dots and arrows once were: it must still get its own box.
    init_0: { on: { GO: 'done' } },
    done: { type: 'final' },
  },
});

const MACHINES: [string, AnyStateMachine][] = [['run', runMachine], ['toolCall', toolCallMachine], ['shapes', shapes]];

/** What the machine defines, read from its StateNode tree: one entry per (transition, target), a targetless one as from → from. */
function definedTransitions(machine: AnyStateMachine): { from: string; to: string; transition: AnyTransitionDefinition }[] {
  const out: { from: string; to: string; transition: AnyTransitionDefinition }[] = [];
  const walk = (node: AnyStateNode) => {
    const own = [...[...node.transitions.values()].flat(), ...(node.always ?? [])];
    for (const transition of own) {
      const from = node.path.join('.');
      const targets = transition.target ?? [];
      if (targets.length === 0) out.push({ from, to: from, transition });
      for (const target of targets) out.push({ from, to: target.path.join('.'), transition });
    }
    for (const child of Object.values(node.states)) walk(child);
  };
  walk(machine.root);
  return out;
}

function boxes(diagram: Diagram): Map<string, { box: DiagramState; parent: DiagramState | undefined }> {
  const out = new Map<string, { box: DiagramState; parent: DiagramState | undefined }>();
  const walk = (box: DiagramState, parent: DiagramState | undefined) => {
    out.set(box.path, { box, parent });
    for (const child of box.children) walk(child, box);
  };
  for (const top of diagram.states) walk(top, undefined);
  return out;
}

const onBorder = (p: DiagramPoint, b: DiagramState): boolean => {
  const inside = p.x >= b.x - 1 && p.x <= b.x + b.width + 1 && p.y >= b.y - 1 && p.y <= b.y + b.height + 1;
  const edge = Math.abs(p.x - b.x) <= 1 || Math.abs(p.x - b.x - b.width) <= 1 || Math.abs(p.y - b.y) <= 1 || Math.abs(p.y - b.y - b.height) <= 1;
  return inside && edge;
};

function distanceToRoute(x: number, y: number, points: readonly DiagramPoint[]): number {
  let best = Infinity;
  for (let i = 1; i < points.length; i++) {
    const p = points[i - 1]!;
    const q = points[i]!;
    const dx = q.x - p.x;
    const dy = q.y - p.y;
    const u = Math.max(0, Math.min(1, ((x - p.x) * dx + (y - p.y) * dy) / (dx * dx + dy * dy || 1)));
    best = Math.min(best, Math.hypot(p.x + u * dx - x, p.y + u * dy - y));
  }
  return best;
}

describe.each(MACHINES)('the %s machine laid out', (_name, machine) => {
  const diagram = layoutMachine(machine);
  const byPath = boxes(diagram);

  it('draws every transition as exactly one arrow, with its label', () => {
    const defined = definedTransitions(machine);
    expect(diagram.transitions).toHaveLength(defined.length);
    expect(new Set(diagram.transitions.map((t) => t.index)).size).toBe(defined.length);
    diagram.transitions.forEach((drawn, i) => {
      const { from, to, transition } = defined[i]!;
      expect([drawn.from, drawn.to], drawn.label).toEqual([from, to]);
      expect(drawn.internal).toBe((transition.target ?? []).length === 0);
      expect(drawn.label).toBe(drawn.guard === undefined ? drawn.event : `${drawn.event} [${drawn.guard}]`);
      const type = transition.eventType;
      if (type !== '' && !type.startsWith('xstate.')) expect(drawn.event).toBe(type);
      if (type === '') expect(drawn.event).toBe('always');
      const guard = transition.guard as { type?: unknown } | string | undefined;
      if (typeof guard === 'string') expect(drawn.guard).toBe(guard);
      else if (typeof guard === 'object' && typeof guard.type === 'string') expect(drawn.guard?.startsWith(guard.type)).toBe(true);
      else if (guard === undefined) expect(drawn.guard).toBeUndefined();
    });
  });

  it('runs each arrow from its source box to its target box, with its label beside it', () => {
    for (const t of diagram.transitions) {
      const from = byPath.get(t.from)!.box;
      const to = byPath.get(t.to)!.box;
      expect(t.points.length, t.label).toBeGreaterThanOrEqual(2);
      expect(onBorder(t.points[0]!, from), `${t.label} starts on ${t.from}`).toBe(true);
      expect(onBorder(t.points.at(-1)!, to), `${t.label} ends on ${t.to}`).toBe(true);
      const { x, y, width, height } = t.labelBox;
      expect(width * height, t.label).toBeGreaterThan(0);
      expect(distanceToRoute(x + width / 2, y + height / 2, t.points), `${t.label}'s label`).toBeLessThanOrEqual(Math.hypot(width, height) / 2 + 12);
      for (const p of [...t.points, { x, y }, { x: x + width, y: y + height }]) {
        expect(p.x >= 0 && p.y >= 0 && p.x <= diagram.width && p.y <= diagram.height, `${t.label} inside the drawing`).toBe(true);
      }
    }
  });

  it('nests the boxes as the states are nested, each child inside its parent', () => {
    const paths: string[] = [];
    const walk = (node: AnyStateNode) => {
      for (const child of Object.values(node.states)) {
        paths.push(child.path.join('.'));
        walk(child);
      }
    };
    walk(machine.root);
    expect([...byPath.keys()].filter((p) => p !== '')).toEqual(paths);
    for (const [path, { box, parent }] of byPath) {
      const node = path === '' ? machine.root : machine.getStateNodeById(`${machine.id}.${path}`);
      expect(box.kind).toBe(node.type);
      expect(box.children.map((c) => c.path)).toEqual(Object.values(node.states).map((s) => s.path.join('.')));
      if (path.includes('.')) expect(parent?.path).toBe(path.split('.').slice(0, -1).join('.'));
      if (!parent) continue;
      expect(box.x).toBeGreaterThanOrEqual(parent.x);
      expect(box.y).toBeGreaterThanOrEqual(parent.y);
      expect(box.x + box.width).toBeLessThanOrEqual(parent.x + parent.width);
      expect(box.y + box.height).toBeLessThanOrEqual(parent.y + parent.height);
    }
  });

  it('puts a start dot in each compound state (and the machine), with an arrow to its initial state', () => {
    const compounds = [machine.root, ...[...byPath.keys()].filter((p) => p !== '').map((p) => machine.getStateNodeById(`${machine.id}.${p}`))]
      .filter((n) => n.type === 'compound');
    expect(diagram.initials.map((i) => [i.of, i.to])).toEqual(compounds.map((n) => [n.path.join('.'), n.initial!.target[0]!.path.join('.')]));
    for (const initial of diagram.initials) {
      expect(byPath.get(initial.to)!.box.initial).toBe(true);
      expect(onBorder(initial.points.at(-1)!, byPath.get(initial.to)!.box)).toBe(true);
    }
  });

  it('marks the given states current and the states containing them active, and refuses a state the machine lacks', () => {
    const leaves = [...byPath.values()].filter(({ box }) => box.children.length === 0 && box.path.includes('.'));
    const current = leaves[0]!.box.path;
    const svg = machineSvg(machine, { key: 'k', current: [current] });
    const marked = [...svg.matchAll(/data-node="([^"]*)"[^>]*data-mark="(\w+)"/g)].map((m) => [m[1], m[2]]);
    const ancestors = current.split('.').slice(0, -1).map((_, i, keys) => keys.slice(0, i + 1).join('.'));
    expect(marked.sort()).toEqual([...ancestors.map((a) => [a, 'active']), [current, 'current']].sort());
    expect(machineSvg(machine, { key: 'k', current: [] })).not.toContain('data-mark=');
    expect(() => machineSvg(machine, { key: 'k', current: ['no.such.state'] })).toThrow(expect.objectContaining({ code: 'invalid_options' }));
  });

  it('writes one arrow element per transition and one group per state into the SVG', () => {
    const svg = machineSvg(machine, { key: 'k', current: [] });
    const edges = [...svg.matchAll(/<g class="edge" data-edge="(\d+)" data-from="([^"]*)" data-to="([^"]*)"[^>]* data-label="([^"]*)"/g)];
    expect(edges.map((m) => Number(m[1]))).toEqual(diagram.transitions.map((t) => t.index));
    expect(edges.map((m) => m[4])).toEqual(diagram.transitions.map((t) => t.label.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;')));
    expect([...svg.matchAll(/<g class="node [^"]*" data-node="([^"]*)"/g)].map((m) => m[1])).toEqual([...byPath.keys()]);
    for (const banned of ['http:', 'https:', 'url(', '<script', 'href']) expect(svg).not.toContain(banned);
  });

  it('is the same drawing for the same machine, laid out again from scratch', () => {
    const again = machine.provide({});
    expect(again).not.toBe(machine);
    expect(layoutMachine(again)).not.toBe(diagram);
    expect(machineSvg(again, { key: 'k', current: [] })).toBe(machineSvg(machine, { key: 'k', current: [] }));
  });
});

describe('the small machine with the other shapes', () => {
  const diagram = layoutMachine(shapes);
  const find = (from: string, event: string) => diagram.transitions.filter((t) => t.from === from && t.event === event);

  it('draws self-loops, targetless transitions, delays, eventless and cross-level arrows', () => {
    expect(find('idle', 'PING').map((t) => [t.to, t.internal])).toEqual([['idle', false]]);
    expect(find('idle', 'STAY').map((t) => [t.to, t.internal])).toEqual([['idle', true]]);
    expect(find('work.left.b', 'PING').map((t) => [t.to, t.internal])).toEqual([['work.left.b', true]]);
    expect(find('work.left.a', 'after soon').map((t) => t.to)).toEqual(['work.left.b']);
    expect(find('work.left.b', 'always').map((t) => [t.to, t.label])).toEqual([['work.left.a', 'always [allowed]']]);
    expect(find('idle', 'JUMP').map((t) => t.to)).toEqual(['work.right.c']);
    expect(find('work.right.c', 'BACK').map((t) => t.to)).toEqual(['done']);
    expect(find('', 'RESET').map((t) => t.to)).toEqual(['idle']);
    expect(find('idle', 'GO').map((t) => t.label)).toEqual(['GO [ready]']);
  });

  it('draws the machine itself as the outer box when it has transitions of its own, and regions without start dots', () => {
    expect(diagram.states.map((s) => s.path)).toEqual(['']);
    expect(diagram.initials.map((i) => i.of)).toEqual(['', 'work.left', 'work.right']);
    const work = diagram.states[0]!.children.find((c) => c.path === 'work')!;
    expect(work.kind).toBe('parallel');
    expect(work.children.find((c) => c.path === 'work.left')!.children.map((c) => [c.path, c.kind])).toEqual([
      ['work.left.a', 'atomic'], ['work.left.b', 'atomic'], ['work.left.past', 'history'],
    ]);
  });
});

describe('an arrow\'s label', () => {
  it('is the event on one line, then the guard, a long one broken after its commas', () => {
    expect(labelLines({ event: 'GO', guard: undefined })).toEqual(['GO']);
    expect(labelLines({ event: 'GO', guard: 'ready' })).toEqual(['GO', '[ready]']);
    const guard = 'and(allEnded, anyNotAdmitted, deadlinePassed, not(anyActive))';
    const lines = labelLines({ event: 'always', guard });
    expect(lines[0]).toBe('always');
    expect(lines.slice(1).join(' ')).toBe(`[${guard}]`);
    expect(lines.length).toBeGreaterThan(2);
    for (const line of lines.slice(1, -1)) expect(line.endsWith(',')).toBe(true);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(30);
  });
});

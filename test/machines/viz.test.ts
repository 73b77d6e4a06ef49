import { describe, expect, it } from 'vitest';
import { and, assign, createActor, fromPromise, not, setup, stateIn } from 'xstate';
import { CairnError } from '../../src/errors/index.js';
import { toDot, toMermaid } from 'cairn/machines';

/** Compound states, `always` with named and inline guards, invoke results, `#id` targets, tags, finals. */
const order = setup({
  types: {} as {
    context: { items: number };
    events: { type: 'SUBMIT' } | { type: 'CANCEL' } | { type: 'APPROVE' } | { type: 'PING' } | { type: 'ns:odd;event' };
  },
  actors: { saveReceipt: fromPromise(async () => 'ok'), notifyOwner: fromPromise(async () => undefined) },
  guards: { hasItems: ({ context }) => context.items > 0, isVip: () => false, isOpen: () => true },
  actions: { audit: () => undefined },
}).createMachine({
  id: 'order',
  initial: 'draft',
  context: { items: 1 },
  on: { CANCEL: '.cancelled' },
  states: {
    draft: { on: { SUBMIT: 'checking', PING: { actions: 'audit' }, 'ns:odd;event': 'draft' } },
    checking: {
      always: [
        { guard: 'hasItems', target: 'saving' },
        { guard: ({ context }) => context.items < 0, target: '#order.failed' },
        { guard: and(['isVip', not({ type: 'isOpen' })]), target: 'review' },
        { target: 'rejected' },
      ],
    },
    review: {
      id: 'manual-review',
      tags: ['suspended', 'needs-human'],
      on: { APPROVE: { target: 'saving', guard: { type: 'isVip', params: { tier: 1 } } } },
    },
    saving: {
      tags: ['effect'],
      entry: ['audit', assign({ items: 2 })],
      invoke: { id: 'receipt', src: 'saveReceipt', onDone: 'notifying', onError: { target: '#order.failed' } },
      after: { 30_000: '#manual-review' },
    },
    notifying: { invoke: { src: 'notifyOwner', onDone: 'done', onError: 'done' } },
    done: { type: 'final' },
    rejected: { type: 'final' },
    cancelled: { type: 'final' },
    failed: { type: 'final' },
  },
});

/** A parallel state with named regions, a nested compound, history, `stateIn` and `onDone`. */
const session = setup({
  types: {} as { events: { type: 'TYPE' } | { type: 'SEND' } | { type: 'TOGGLE' } | { type: 'BACK' } },
  guards: { canSend: () => true },
}).createMachine({
  id: 'session',
  initial: 'active',
  states: {
    active: {
      type: 'parallel',
      onDone: 'closed',
      states: {
        editor: {
          initial: 'empty',
          states: {
            empty: { on: { TYPE: 'dirty' } },
            dirty: { on: { SEND: { target: 'sent', guard: 'canSend' } } },
            sent: { type: 'final' },
          },
        },
        panel: {
          initial: 'hidden',
          states: {
            hidden: { on: { TOGGLE: 'shown' } },
            shown: {
              initial: 'list',
              states: { list: { always: { guard: stateIn('#session.active.editor.dirty'), target: 'detail' } }, detail: {} },
              on: { TOGGLE: 'hidden' },
            },
            remembered: { type: 'history', history: 'deep' },
          },
          on: { BACK: '.remembered' },
        },
      },
    },
    closed: { type: 'final' },
  },
});

/** Small enough to read whole: the golden snapshot. */
const light = setup({
  types: {} as { events: { type: 'GO' } | { type: 'STOP' } },
  actors: { beep: fromPromise(async () => undefined) },
}).createMachine({
  id: 'light',
  initial: 'red',
  states: {
    red: { on: { GO: 'green' } },
    green: { tags: ['moving'], invoke: { src: 'beep', onDone: 'yellow' }, on: { STOP: 'yellow' } },
    yellow: { always: { target: 'red', guard: () => true } },
    off: { type: 'final' },
  },
});

const lines = (text: string) => text.split('\n').map((line) => line.trim());

describe('toMermaid', () => {
  it('draws the golden chart of a small machine', () => {
    expect(toMermaid(light)).toMatchInlineSnapshot(`
      "stateDiagram-v2
        [*] --> red
        state "red" as red
        state "green<br/>invoke#colon; beep<br/>«moving»" as green
        state "yellow" as yellow
        state "off" as off
        off --> [*]
        red --> green : GO
        green --> yellow : STOP
        green --> yellow : done#colon; beep
        yellow --> red : always [guard]
      "
    `);
  });

  it('labels events, actor results, eventless transitions, timers and guards', () => {
    const out = lines(toMermaid(order));
    expect(out[0]).toBe('stateDiagram-v2');
    expect(out).toEqual(
      expect.arrayContaining([
        'draft --> checking : SUBMIT',
        'checking --> saving : always [hasItems]',
        'checking --> failed : always [guard]',
        'checking --> review : always [and(isVip, not(isOpen))]',
        'checking --> rejected : always',
        'review --> saving : APPROVE [isVip(1)]',
        'saving --> notifying : done#colon; receipt',
        'saving --> failed : error#colon; receipt',
        'saving --> review : after 30000ms',
        // an invoke without an explicit id is named by its src, not by XState's generated id
        'notifying --> done : done#colon; notifyOwner',
        'notifying --> done : error#colon; notifyOwner',
        // characters that would end or split a Mermaid line are entities
        'draft --> draft : ns#colon;odd#59;event',
      ]),
    );
  });

  it('shows invoked actors, entry actions, internal transitions and tags in the state box', () => {
    const out = lines(toMermaid(order));
    expect(out).toContain('state "saving<br/>invoke#colon; saveReceipt as receipt<br/>entry#colon; audit<br/>«effect»" as saving');
    expect(out).toContain('state "draft<br/>↺ PING" as draft');
    expect(out).toContain('state "review<br/>«suspended, needs-human»" as review');
    expect(out).toContain('state "notifying<br/>invoke#colon; notifyOwner" as notifying');
  });

  it('marks the initial and final states, and wraps the machine when it has transitions of its own', () => {
    const out = lines(toMermaid(order));
    expect(out.slice(0, 3)).toEqual(['stateDiagram-v2', 'state "order" as order {', '[*] --> draft']);
    for (const final of ['done', 'rejected', 'cancelled', 'failed']) expect(out).toContain(`${final} --> [*]`);
    expect(out).toContain('order --> cancelled : CANCEL');
  });

  it('nests compound states, separates parallel regions, and resolves #id targets', () => {
    const text = toMermaid(session);
    expect(text).toContain(
      [
        '  state "active (parallel)" as active {',
        '    state "editor" as active_editor {',
        '      [*] --> active_editor_empty',
        '      state "empty" as active_editor_empty',
        '      state "dirty" as active_editor_dirty',
        '      state "sent" as active_editor_sent',
        '      active_editor_sent --> [*]',
        '    }',
        '    --',
        '    state "panel" as active_panel {',
      ].join('\n'),
    );
    const out = lines(text);
    expect(out).toContain('state "remembered (deep history)" as active_panel_remembered');
    expect(out).toContain('active_panel_shown_list --> active_panel_shown_detail : always [in(#35;session.active.editor.dirty)]');
    expect(out).toContain('active_panel --> active_panel_remembered : BACK');
    expect(out).toContain('active --> closed : done');
    // the machine has no transitions of its own: no wrapping block
    expect(out[1]).toBe('[*] --> active');
  });

  it('gives every state a valid, unique Mermaid id and keeps its name as the label', () => {
    const odd = setup({}).createMachine({
      id: 'odd-one',
      initial: 'a-b',
      states: { 'a-b': { on: { NEXT: 'a_b' } }, a_b: { on: { NEXT: 'default' } }, default: {}, 'odd-one': {} },
    });
    const out = lines(toMermaid(odd));
    expect(out).toEqual(
      expect.arrayContaining([
        '[*] --> a_b',
        'state "a-b" as a_b',
        'state "a_b" as a_b_2',
        'state "default" as s_default',
        'state "odd-one" as odd_one',
        'a_b --> a_b_2 : NEXT',
        'a_b_2 --> s_default : NEXT',
      ]),
    );
    for (const line of out.filter((l) => l.startsWith('state '))) {
      expect(line).toMatch(/ as [A-Za-z0-9_]+( \{)?$/);
    }
  });

  it('is deterministic and follows definition order', () => {
    expect(toMermaid(order)).toBe(toMermaid(order));
    const states = lines(toMermaid(order))
      .filter((l) => l.startsWith('state "') && !l.endsWith('{'))
      .map((l) => / as (\w+)$/.exec(l)?.[1]);
    expect(states).toEqual(['draft', 'checking', 'review', 'saving', 'notifying', 'done', 'rejected', 'cancelled', 'failed']);
  });

  it('draws the always transitions that machine.toJSON() leaves out', () => {
    const definition = order.toJSON() as { states: Record<string, { transitions: unknown[] }> };
    expect(definition.states['checking']?.transitions).toHaveLength(0);
    expect(toMermaid(order).match(/^ {2}checking --> /gm)).toHaveLength(4);
  });
});

describe('highlight', () => {
  const classLine = (text: string) => lines(text).find((l) => l.startsWith('class '));

  it('highlights state paths and their ancestors', () => {
    const text = toMermaid(session, { highlight: ['active.panel.shown.detail', 'active.editor.dirty'] });
    expect(text).toContain('  classDef current fill:#ffe066,stroke:#e8590c,stroke-width:3px,color:#000\n');
    expect(classLine(text)).toBe(
      'class active,active_editor,active_editor_dirty,active_panel,active_panel_shown,active_panel_shown_detail current',
    );
  });

  it('accepts a state value, as stored in a snapshot', () => {
    const actor = createActor(session).start();
    actor.send({ type: 'TYPE' });
    actor.send({ type: 'TOGGLE' });
    const value = actor.getSnapshot().value;
    expect(value).toEqual({ active: { editor: 'dirty', panel: { shown: 'detail' } } });
    expect(toMermaid(session, { highlight: value })).toBe(
      toMermaid(session, { highlight: ['active.editor.dirty', 'active.panel.shown.detail'] }),
    );
    expect(classLine(toMermaid(order, { highlight: 'saving' }))).toBe('class saving current');
  });

  it('accepts #state ids', () => {
    expect(classLine(toMermaid(order, { highlight: ['#manual-review'] }))).toBe('class review current');
  });

  it('draws no highlight by default', () => {
    expect(toMermaid(order)).not.toContain('current');
    expect(toMermaid(order, { highlight: [] })).not.toContain('classDef');
  });

  it('refuses a path that is not a state of the machine', () => {
    for (const highlight of [['loop.awaitingTools'], ['#nowhere'], { draft: 'inner' }]) {
      let caught: unknown;
      try {
        toMermaid(order, { highlight });
      } catch (error) {
        caught = error;
      }
      expect(CairnError.isInstance(caught) && caught.code).toBe('invalid_options');
    }
  });

  it('fills the current states in DOT', () => {
    const dot = toDot(order, { highlight: ['saving'] });
    expect(dot).toContain(
      '"saving" [label="saving\\ninvoke: saveReceipt as receipt\\nentry: audit\\n«effect»", style="rounded,filled", fillcolor="#ffe066", color="#e8590c", penwidth=2];',
    );
    const nested = toDot(session, { highlight: { active: { editor: 'dirty', panel: 'hidden' } } });
    expect(nested).toMatch(/subgraph "cluster_active_editor" \{\n\s+label="editor";\n\s+style="rounded,dashed,filled"; fillcolor="#fff9db"/);
  });
});

describe('toDot', () => {
  it('uses the same labels, clusters for compound states and double borders for final states', () => {
    const dot = toDot(order);
    expect(dot.startsWith('digraph "order" {\n  compound=true;')).toBe(true);
    expect(dot.trimEnd().endsWith('}')).toBe(true);
    expect(dot).toContain('subgraph "cluster_order" {');
    expect(dot).toContain('"done" [label="done", peripheries=2];');
    expect(dot).toContain('"draft" [label="draft\\n↺ PING"];');
    expect(dot).toContain('"checking" -> "failed" [label="always [guard]"];');
    expect(dot).toContain('"saving" -> "notifying" [label="done: receipt"];');
    expect(dot).toContain('"saving" -> "review" [label="after 30000ms"];');
    expect(dot).toContain('"draft" -> "draft" [label="ns:odd;event"];');
    expect(dot).toContain('"order__start" -> "draft";');
  });

  it('clips edges at cluster borders and dashes parallel regions', () => {
    const dot = toDot(session);
    expect(dot).toContain('"active__anchor" -> "closed" [label="done", ltail="cluster_active"];');
    expect(dot).toContain('"active_panel_hidden" -> "active_panel_shown__anchor" [label="TOGGLE", lhead="cluster_active_panel_shown"];');
    // an edge into the block's own descendant cannot be clipped at that block
    expect(dot).toContain('"active_panel__anchor" -> "active_panel_remembered" [label="BACK"];');
    expect(dot).toContain('"active_panel_shown__start" -> "active_panel_shown_list";');
    expect(dot).toMatch(/subgraph "cluster_active_panel" \{\n\s+label="panel";\n\s+style="rounded,dashed";/);
    expect(dot).toContain('label="active (parallel)";');
  });

  it('escapes quotes and backslashes in labels', () => {
    const quoted = setup({}).createMachine({ id: 'q', initial: 'a', states: { a: { on: { 'say "hi"\\': 'b' } }, b: {} } });
    expect(toDot(quoted)).toContain('"a" -> "b" [label="say \\"hi\\"\\\\"];');
    expect(toMermaid(quoted)).toContain('a --> b : say #quot;hi#quot;\\');
  });
});

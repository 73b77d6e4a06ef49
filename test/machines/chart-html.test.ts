/**
 * renderRunChartHtml on every record of the compatibility corpus: the marked states are the ones
 * describeRun reports, every open call has its chart with its stage, the page asks for nothing
 * from a network, it shows nothing describeRun does not (no tokens, arguments or results), and its
 * summary agrees with the charts and the timeline. The diagrams themselves are
 * test/machines/chart-diagram.test.ts; the page in a browser is test/browser/chart.test.ts and
 * test/browser/chart-diagram.test.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { AgentRunEnvelope } from 'cairn/agent';
import { describeRun, renderRunChartHtml, runMachine, toolCallMachine } from 'cairn/machines';

const CORPUS = fileURLToPath(new URL('../compat/corpus/', import.meta.url));
const corpus = readdirSync(CORPUS).filter((d) => /^run-v\d+$/.test(d)).flatMap((version) =>
  readdirSync(join(CORPUS, version)).filter((f) => f.endsWith('.json')).map((file) => ({
    label: `${version}/${file}`,
    text: readFileSync(join(CORPUS, version, file), 'utf8'),
  })));
const load = (label: string) => JSON.parse(corpus.find((c) => c.label === label)!.text) as AgentRunEnvelope;

/** The page cut at each chart section: `run`, then one per drawn call, keyed by call id. */
function sections(html: string): { run: string; calls: Map<string, { stage: string; html: string }> } {
  const parts = html.split('<section class="chart').slice(1);
  const calls = new Map<string, { stage: string; html: string }>();
  let run = '';
  for (const part of parts) {
    const open = part.slice(0, part.indexOf('>'));
    if (open.includes('data-chart="run"')) run = part;
    else calls.set(/data-call-id="([^"]*)"/.exec(open)![1]!, { stage: /data-stage="([^"]*)"/.exec(open)![1]!, html: part });
  }
  return { run, calls };
}

/** The `data-state` of every box marked `data-current="true"`. */
const currentStates = (html: string): string[] =>
  [...html.matchAll(/<div [^>]*data-state="([^"]*)"[^>]*data-current="true"/g)].map((m) => m[1]!).sort();
const allStates = (html: string): string[] => [...html.matchAll(/<div [^>]*data-state="([^"]*)"/g)].map((m) => m[1]!);
const statesOf = (machine: typeof runMachine | typeof toolCallMachine): string[] => {
  const out: string[] = [];
  const walk = (node: typeof machine.root) => {
    for (const child of Object.values(node.states)) {
      out.push(child.path.join('.'));
      walk(child);
    }
  };
  walk(machine.root);
  return out;
};

/** How many transitions the machine defines: one per target, one for each targetless transition. */
const transitionCount = (machine: typeof runMachine | typeof toolCallMachine): number => {
  let n = 0;
  const walk = (node: typeof machine.root) => {
    for (const t of [...[...node.transitions.values()].flat(), ...(node.always ?? [])]) n += Math.max(1, t.target?.length ?? 0);
    Object.values(node.states).forEach(walk);
  };
  walk(machine.root);
  return n;
};
/** The arrows of a chart's diagram, and the transition lines of its text below. */
const arrows = (html: string): number => [...html.matchAll(/<g class="edge" data-edge="/g)].length;
const textLines = (html: string): number => [...html.matchAll(/<li><span class="event">/g)].length;

describe('renderRunChartHtml on the compatibility corpus', () => {
  for (const fixture of corpus) {
    it(`draws ${fixture.label} at the states describeRun reports`, () => {
      const envelope = JSON.parse(fixture.text) as AgentRunEnvelope;
      const html = renderRunChartHtml(envelope);
      const run = describeRun(envelope);
      expect(JSON.stringify(envelope), 'the envelope is left as it was').toBe(JSON.stringify(JSON.parse(fixture.text)));
      expect(html.startsWith('<!doctype html>')).toBe(true);

      const { run: runChart, calls } = sections(html);
      expect(currentStates(runChart)).toEqual([...run.states].sort());
      expect(allStates(runChart)).toEqual(statesOf(runMachine));
      // Every transition is an arrow in the diagram and a line in the text below it.
      expect(arrows(runChart)).toBe(transitionCount(runMachine));
      expect(textLines(runChart)).toBe(transitionCount(runMachine));
      expect(runChart.indexOf('<svg class="diagram-svg"')).toBeLessThan(runChart.indexOf('<div class="machine"'));
      expect([...calls.keys()]).toEqual(run.calls.map((c) => c.toolCallId));
      for (const call of run.calls) {
        const drawn = calls.get(call.toolCallId)!;
        expect(drawn.stage).toBe(call.stage);
        expect(currentStates(drawn.html)).toEqual([...call.states].sort());
        expect(allStates(drawn.html)).toEqual(statesOf(toolCallMachine));
        expect(arrows(drawn.html)).toBe(transitionCount(toolCallMachine));
        expect(textLines(drawn.html)).toBe(transitionCount(toolCallMachine));
      }
      // Every step and every call of the history can be clicked for its details.
      for (const step of run.steps) {
        expect(html).toContain(`data-detail="d-step-${step.step}"`);
        for (const call of step.calls) expect(html).toMatch(new RegExp(`class="call-ref" data-detail="[^"]+" data-call-id="${call.toolCallId}"`));
      }

      // Offline: nothing that loads from anywhere, and a policy that would refuse it anyway.
      for (const banned of ['http://', 'https://', '<script src', '<link', '@import', 'url(', 'src=']) expect(html).not.toContain(banned);
      expect(html).toContain(`content="default-src 'none';`);

      // Nothing private: no approval token, no argument, no result.
      for (const approval of envelope.pendingApprovals) expect(html).not.toContain(approval.token);
      const messages = (envelope.snapshot as { context: { messages: { role: string; content: unknown; toolCalls?: { args: unknown }[] }[] } }).context.messages;
      for (const message of messages) {
        for (const call of message.toolCalls ?? []) expect(html).not.toContain(JSON.stringify(call.args));
        if (message.role === 'tool') expect(html).not.toContain(JSON.stringify(message.content));
        if (message.role !== 'tool' && typeof message.content === 'string' && message.content.length > 12) expect(html).not.toContain(message.content);
      }
    });
  }
});

describe('renderRunChartHtml options and text', () => {
  it('with callId, draws a call that has ended (without a marked state) and shows its details first', () => {
    const envelope = load('run-v2/suspended-approval.json');
    const html = renderRunChartHtml(envelope, { callId: 'lookup-1' });
    const { calls } = sections(html);
    expect([...calls.keys()]).toEqual(['lookup-1', 'pay-1']);
    expect(calls.get('lookup-1')!.stage).toBe('');
    expect(currentStates(calls.get('lookup-1')!.html)).toEqual([]);
    expect(calls.get('lookup-1')!.html.startsWith(' selected"')).toBe(true);
    // The shown detail is the selected call's; the run's present is hidden until clicked.
    expect(html).toMatch(/<div class="detail" id="d-call-0-0" data-detail-of="call" data-call-id="lookup-1"><h3>/);
    expect(html).toMatch(/<div class="detail" id="d-now" data-detail-of="run" hidden>/);
    // An open call selected by id is not drawn twice.
    expect([...sections(renderRunChartHtml(envelope, { callId: 'pay-1' })).calls.keys()]).toEqual(['pay-1']);
  });

  it('refuses a call id the run does not have, with a typed error', () => {
    expect(() => renderRunChartHtml(load('run-v2/completed.json'), { callId: 'nope' }))
      .toThrow(expect.objectContaining({ name: 'InvalidOptionsError', code: 'invalid_options' }));
    expect(() => renderRunChartHtml(null as never)).toThrow(expect.objectContaining({ code: 'invalid_envelope' }));
  });

  it('escapes every text it shows: a tool name, a title', () => {
    const envelope = load('run-v2/completed.json');
    const hostile = '<img onerror="alert(1)">&\'';
    const messages = (envelope.snapshot as { context: { messages: { toolCalls?: { toolName: string }[] }[] } }).context.messages;
    for (const message of messages) for (const call of message.toolCalls ?? []) call.toolName = hostile;
    const html = renderRunChartHtml(envelope, { title: `</title><script>alert(2)</script>` });
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<script>alert');
    expect(html).toContain('&lt;img onerror=&quot;alert(1)&quot;&gt;&amp;&#39;');
    expect(html).toContain('<title>&lt;/title&gt;&lt;script&gt;alert(2)&lt;/script&gt;</title>');
    expect(html.match(/<script>/g)).toHaveLength(1);
  });

  it('gives each run its outcome in the summary: how it ended, or that it has not yet', () => {
    const outcome = (label: string) => /<span data-field="outcome"[^>]*>([^<]*)<\/span>/.exec(renderRunChartHtml(load(label)))![1];
    expect(outcome('run-v2/completed.json')).toBe('completed after 2 model steps, with its output (not shown)');
    expect(outcome('run-v2/failed-transient.json')).toBe('failed: error api_call_failed after 1 model step; retryable from its last checkpoint (resume with retryFailed)');
    expect(outcome('run-v2/suspended-approval.json')).toBe('none yet: suspended until it gets what it waits for');
    expect(outcome('run-v2/drained.json')).toBe('none yet: drained, a resume goes on from its last checkpoint');
    expect(outcome('run-v2/unknown-effect.json')).toBe('none yet: the run is under way');
    const stopped = load('run-v2/completed.json');
    const result = stopped.result!;
    Object.assign(stopped, { status: 'stopped', result: { ...result, status: 'stopped', reason: 'max-steps' } });
    expect(/<span data-field="outcome"[^>]*>([^<]*)<\/span>/.exec(renderRunChartHtml(stopped))![1]).toBe('stopped: max-steps after 2 model steps');
  });

  it('has a summary that agrees with the page: its states are the marked ones, its steps the timeline\'s', () => {
    for (const fixture of corpus) {
      const html = renderRunChartHtml(JSON.parse(fixture.text) as AgentRunEnvelope);
      const run = describeRun(JSON.parse(fixture.text) as AgentRunEnvelope);
      const summary = html.slice(html.indexOf('<dl class="summary">'), html.indexOf('</dl>'));
      expect([...summary.matchAll(/data-field="run-states">(.*?)<\/span>/g)].length, fixture.label).toBe(1);
      expect([.../data-field="run-states">(.*?)<\/span>/.exec(summary)![1]!.matchAll(/<code>([^<]*)<\/code>/g)].map((m) => m[1])).toEqual(run.states);
      const { run: runChart } = sections(html);
      expect([...runChart.matchAll(/data-node="([^"]*)"[^>]*data-mark="current"/g)].map((m) => m[1]).sort(), fixture.label).toEqual([...run.states].sort());
      expect(/data-field="steps">(\d+)</.exec(summary)![1]).toBe(String([...html.matchAll(/<li data-step="/g)].length));
      expect(/data-field="status">([^<]*)</.exec(summary)![1]).toBe(/<body [^>]*data-status="([^"]*)"/.exec(html)![1]);
      // A failed run's marked states are the checkpoint a retry goes on from, and the summary says so.
      expect(summary.includes('its last checkpoint, which a retry goes on from'), fixture.label).toBe(run.status === 'failed' && run.outcome.retryable);
      // A suspended or drained run's record was written by the save of the state it shows (suspending, draining).
      expect(summary.includes('the state whose save wrote this record'), fixture.label).toBe(['suspended', 'drained'].includes(run.status));
    }
  });

  it('is the same page for the same record', () => {
    const envelope = load('run-v1/unknown-effect.json');
    expect(renderRunChartHtml(envelope)).toBe(renderRunChartHtml(structuredClone(envelope)));
  });
});

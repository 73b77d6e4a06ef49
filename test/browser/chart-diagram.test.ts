/**
 * The stored-run page's diagrams in a real browser (Debian's Chromium, headless, driven by
 * playwright-core), for runs stored in a SQLite file by runAgent and resumeAgent: the run
 * suspends on an approval, then completes once it is approved. On each page, every transition of
 * the run machine (and of the tool-call machine, for the open call) has its arrow element, drawn
 * and ending on its target's box; the states the run is in are marked and styled as such; and
 * the summary says what the rest of the page says, a completed run's outcome included.
 *
 * Without /usr/bin/chromium the test fails in CI and is skipped elsewhere, with a notice.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnyStateMachine, AnyStateNode } from 'xstate';
import { resumeAgent, runAgent, type AgentRunEnvelope } from 'cairn/agent';
import { describeRun, renderRunChartHtml, runMachine, toolCallMachine } from 'cairn/machines';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createMockModel } from 'cairn/testing';
import { browserTestRuns, launchChromium, watchedPage } from './chromium.js';

const RUNS = browserTestRuns("the chart diagrams' browser test");

/** Each transition of the machine as (from, to), a targetless one from its state to itself, in definition order. */
function transitionsOf(machine: AnyStateMachine): [string, string][] {
  const out: [string, string][] = [];
  const walk = (node: AnyStateNode) => {
    const from = node.path.join('.');
    for (const t of [...[...node.transitions.values()].flat(), ...(node.always ?? [])]) {
      const targets = t.target ?? [];
      if (targets.length === 0) out.push([from, from]);
      for (const target of targets) out.push([from, target.path.join('.')]);
    }
    for (const child of Object.values(node.states)) walk(child);
  };
  walk(machine.root);
  return out;
}

interface DrawnEdge { index: number; from: string; to: string; label: string; length: number; endsOnTarget: boolean }

/**
 * Every arrow of one diagram, read in the page: its data attributes, the length Chromium gives
 * its path, and whether the path's last point lies on the border of its target's box. A string,
 * so the project typechecks without the DOM library.
 */
const READ_EDGES = (chart: string) => `(() => {
  const svg = document.querySelector(${JSON.stringify(`${chart} svg.diagram-svg`)});
  const box = (path) => [...svg.querySelectorAll('g[data-node]')].find((g) => g.getAttribute('data-node') === path).querySelector(':scope > rect.box');
  return [...svg.querySelectorAll('g.edge')].map((g) => {
    const path = g.querySelector('path');
    const length = path.getTotalLength();
    const end = path.getPointAtLength(length);
    const r = box(g.getAttribute('data-to'));
    const [x, y, w, h] = ['x', 'y', 'width', 'height'].map((a) => Number(r.getAttribute(a)));
    const inside = end.x >= x - 1 && end.x <= x + w + 1 && end.y >= y - 1 && end.y <= y + h + 1;
    const border = Math.abs(end.x - x) <= 1 || Math.abs(end.x - x - w) <= 1 || Math.abs(end.y - y) <= 1 || Math.abs(end.y - y - h) <= 1;
    return { index: Number(g.getAttribute('data-edge')), from: g.getAttribute('data-from'), to: g.getAttribute('data-to'), label: g.getAttribute('data-label'), length, endsOnTarget: inside && border };
  });
})()`;

describe.skipIf(!RUNS)('the chart diagrams of a stored run, in Chromium', () => {
  const temp: string[] = [];
  const requests: string[] = [];
  const problems: string[] = [];
  let context: BrowserContext;
  let page: Page;
  const pages: Record<'suspended' | 'completed', { envelope: AgentRunEnvelope; url: string }> = {} as never;

  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cairn-chart-diagram-'));
    const profile = await mkdtemp(join(tmpdir(), 'cairn-chromium-'));
    temp.push(dir, profile);

    // A real run in a real store: it suspends on the approval of `pay`, then completes once approved.
    const ops = createSqliteOpsStore({ path: join(dir, 'runs.sqlite') });
    try {
      const tools = {
        lookup: { description: 'Look up an invoice.', parameters: { type: 'object' as const }, execute: () => ({ amount: 12 }) },
        pay: { description: 'Pay it.', parameters: { type: 'object' as const }, needsApproval: true, execute: () => ({ paid: true }) },
      };
      const session = { store: ops.agentRuns, runId: 'invoice-7', scope: 'billing' };
      const first = await runAgent({
        model: createMockModel({ responses: [
          { toolCalls: [{ toolCallId: 'look-1', toolName: 'lookup', args: {} }] },
          { toolCalls: [{ toolCallId: 'pay-1', toolName: 'pay', args: {} }] },
        ] }),
        prompt: 'Pay invoice 7.', tools, session,
      });
      expect(first.status).toBe('suspended');
      const suspended = (await ops.agentRuns.load('invoice-7', { scope: 'billing', saves: true }))!;
      const [pending] = first.status === 'suspended' ? first.pendingApprovals : [];
      const done = await resumeAgent({
        model: createMockModel({ responses: [{ text: 'Paid invoice 7.' }] }),
        prompt: 'Pay invoice 7.', tools, session,
        approvalResponses: [{ approvalId: pending!.approvalId, token: pending!.token, approved: true }],
      });
      expect(done.status).toBe('completed');
      const completed = (await ops.agentRuns.load('invoice-7', { scope: 'billing', saves: true }))!;
      for (const [name, envelope] of [['suspended', suspended], ['completed', completed]] as const) {
        const file = join(dir, `${name}.html`);
        await writeFile(file, renderRunChartHtml(envelope));
        pages[name] = { envelope, url: pathToFileURL(file).href };
      }
    } finally {
      ops.close();
    }

    context = await launchChromium(profile);
    page = await watchedPage(context, requests, problems);
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    for (const dir of temp) await rm(dir, { recursive: true, force: true });
  });

  const marked = async (selector: string, mark: 'current' | 'active') =>
    Promise.all((await page.locator(`${selector} svg [data-mark="${mark}"]`).all()).map(async (g) => (await g.getAttribute('data-node')) ?? ''));

  it('draws an arrow for every transition of the run and tool-call machines, and marks where the suspended run is', async () => {
    const { envelope, url } = pages.suspended;
    const run = describeRun(envelope);
    expect(run.states).toEqual(['suspending']);
    expect(run.calls.map((c) => [c.toolCallId, c.states])).toEqual([['pay-1', ['approval.awaitingApproval']]]);
    requests.length = 0;
    await page.goto(url);

    for (const [chart, machine] of [['[data-chart="run"]', runMachine], ['[data-chart="call"][data-call-id="pay-1"]', toolCallMachine]] as const) {
      const edges = (await page.evaluate(READ_EDGES(chart))) as DrawnEdge[];
      expect(edges.map((e) => [e.from, e.to]), chart).toEqual(transitionsOf(machine));
      expect(edges.map((e) => e.index)).toEqual(edges.map((_, i) => i));
      for (const edge of edges) {
        expect(edge.label, `${chart} arrow ${edge.index}`).not.toBe('');
        expect(edge.length, `${chart} ${edge.label} is drawn`).toBeGreaterThan(0);
        expect(edge.endsOnTarget, `${chart} ${edge.label} ends on ${edge.to}`).toBe(true);
      }
      // One box per state, nested as the states are.
      expect(await page.locator(`${chart} svg g[data-node="approval"] > g[data-node="approval.awaitingApproval"]`).count()).toBe(machine === toolCallMachine ? 1 : 0);
    }
    expect(await page.locator('[data-chart="run"] svg g[data-node="loop"] > g[data-node="loop.callingModel"]').count()).toBe(1);

    // The marks are the run's states and the call's, and they are drawn as such.
    expect(await marked('[data-chart="run"]', 'current')).toEqual(run.states);
    expect(await marked('[data-chart="run"]', 'active')).toEqual([]);
    expect(await marked('[data-chart="call"][data-call-id="pay-1"]', 'current')).toEqual(['approval.awaitingApproval']);
    expect(await marked('[data-chart="call"][data-call-id="pay-1"]', 'active')).toEqual(['approval']);
    const now = page.locator('[data-chart="run"] svg g[data-node="suspending"] > rect.box');
    type Styled = { getComputedStyle(el: unknown): { strokeWidth: string; fill: string } };
    expect(await now.evaluate((el) => (globalThis as unknown as Styled).getComputedStyle(el).strokeWidth)).toBe('3px');
    const plain = page.locator('[data-chart="run"] svg g[data-node="starting"] > rect.box');
    expect(await plain.evaluate((el) => (globalThis as unknown as Styled).getComputedStyle(el).strokeWidth)).not.toBe('3px');
    expect(await page.locator('[data-chart="run"] svg g[data-node="suspending"] > text.now').textContent()).toBe('now');
    // The diagram is larger than its box, which opens scrolled to the state marked now.
    const frame = (await page.locator('[data-chart="run"] > .diagram').boundingBox())!;
    const shown = (await now.boundingBox())!;
    expect(shown.x >= frame.x && shown.x + shown.width <= frame.x + frame.width, 'the marked state is in view across').toBe(true);
    expect(shown.y >= frame.y && shown.y + shown.height <= frame.y + frame.height, 'the marked state is in view down').toBe(true);

    // The text lists are still there, below the diagram, for a search of the page.
    const order = await page.locator('[data-chart="run"] > .diagram, [data-chart="run"] > .machine').evaluateAll((els) => els.map((el) => (el as unknown as { className: string }).className));
    expect(order).toEqual(['diagram', 'machine']);
    expect(await page.locator('[data-chart="run"] .machine [data-state="suspending"]').getAttribute('data-current')).toBe('true');
    await page.screenshot({ path: 'test-artifacts/run-chart-diagram.png', fullPage: false });

    expect(await page.locator('header .summary [data-field="outcome"]').textContent()).toBe('none yet: suspended until it gets what it waits for');
    expect(requests).toEqual([url]);
    expect(problems).toEqual([]);
  });

  it('shows a completed run\'s outcome in the summary, which agrees with the rest of the page', async () => {
    const { envelope, url } = pages.completed;
    const run = describeRun(envelope);
    expect(run.status).toBe('completed');
    requests.length = 0;
    await page.goto(url);

    const summary = page.locator('header .summary');
    expect(await summary.locator('[data-field="status"]').textContent()).toBe('completed');
    expect(await summary.locator('[data-field="outcome"]').textContent()).toBe(`completed after ${run.steps.length} model steps, with its output (not shown)`);
    expect(await summary.textContent()).not.toContain('none yet');
    // The states, steps and status the summary gives are the ones the chart marks and the timeline lists.
    expect(await summary.locator('[data-field="run-states"]').textContent()).toBe(run.states.join(', '));
    expect(await marked('[data-chart="run"]', 'current')).toEqual(run.states);
    expect(run.states).toEqual(['completed']);
    expect(await summary.locator('[data-field="steps"]').textContent()).toBe(String(await page.locator('#timeline-panel li[data-step]').count()));
    expect(run.steps.length).toBe(3);
    expect(await page.locator('#timeline-panel button.step.now').textContent()).toBe('Now: completed');
    expect(await summary.textContent()).toContain('Waiting fornothing');
    // No call is open, so only the run chart is drawn; every transition still has its arrow.
    expect(await page.locator('[data-chart="call"]').count()).toBe(0);
    expect(((await page.evaluate(READ_EDGES('[data-chart="run"]'))) as DrawnEdge[]).map((e) => [e.from, e.to])).toEqual(transitionsOf(runMachine));
    expect(requests).toEqual([url]);
    expect(problems).toEqual([]);
  });
});

/**
 * The stored-run page in a real browser (Debian's Chromium, headless, driven by playwright-core):
 * the HTML of a run suspended on an approval, loaded from a file. The marked states are the ones
 * describeRun reports; a person clicks the waiting call and sees its stage and states, clicks a
 * step and sees its calls; the page makes no request but for itself, and logs no error (a
 * blocked load would log a Content-Security-Policy violation).
 *
 * Without /usr/bin/chromium the test fails in CI and is skipped elsewhere, with a notice.
 */
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, type AgentRunEnvelope } from 'cairn/agent';
import { describeRun, renderRunChartHtml } from 'cairn/machines';
import { createWebExampleServer } from '../../examples/web/server.js';
import { browserTestRuns, launchChromium, watchedPage } from './chromium.js';

const RUNS = browserTestRuns("the stored-run chart's browser test");

const RECORD = fileURLToPath(new URL('../compat/corpus/run-v2/suspended-approval.json', import.meta.url));

describe.skipIf(!RUNS)('a stored run on its chart, in Chromium', () => {
  const envelope = JSON.parse(readFileSync(RECORD, 'utf8')) as AgentRunEnvelope;
  const run = describeRun(envelope);
  let context: BrowserContext;
  let page: Page;
  let url: string;
  const temp: string[] = [];
  const requests: string[] = [];
  const problems: string[] = [];

  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cairn-chart-page-'));
    const profile = await mkdtemp(join(tmpdir(), 'cairn-chromium-'));
    temp.push(dir, profile);
    const file = join(dir, 'run.html');
    await writeFile(file, renderRunChartHtml(envelope));
    url = pathToFileURL(file).href;
    context = await launchChromium(profile);
    page = await watchedPage(context, requests, problems);
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    for (const dir of temp) await rm(dir, { recursive: true, force: true });
  });

  it('is served by the web example for a run of its scope, and loads nothing there either', async () => {
    const runs = createInMemoryAgentRunStore();
    const ours = { ...envelope, runId: 'web-stored', scope: 'web-example' };
    const theirs = { ...envelope, runId: 'other-tenant' };
    for (const stored of [ours, theirs]) for (let revision = 1; revision <= stored.revision; revision++) await runs.save({ ...stored, revision });
    const server: Server = createWebExampleServer({ distDir: temp[0]!, runs });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const served = await fetch(`${base}/api/chart?runId=web-stored`);
      expect(served.status).toBe(200);
      expect(served.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(served.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(await served.text()).toBe(renderRunChartHtml((await runs.load('web-stored'))!));
      // Another scope's run answers as a missing one does.
      for (const [query, status] of [['runId=other-tenant', 404], ['runId=nothing', 404], ['', 400]] as const) {
        expect((await fetch(`${base}/api/chart?${query}`)).status, query).toBe(status);
      }
      expect(await (await fetch(`${base}/api/chart?runId=other-tenant`)).json()).toEqual({ error: { message: 'There is no run other-tenant.' } });

      const seen: string[] = [];
      const tab = await context.newPage();
      tab.on('request', (request) => seen.push(request.url()));
      await tab.goto(`${base}/api/chart?runId=web-stored`);
      const marked = await Promise.all((await tab.locator('[data-chart="run"] [data-current="true"]').all()).map((el) => el.getAttribute('data-state')));
      expect(marked).toEqual(run.states);
      expect(seen).toEqual([`${base}/api/chart?runId=web-stored`]);
      await tab.close();
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  // The project typechecks without the DOM library: attributes are read through locators.
  const dataStates = async (selector: string) =>
    Promise.all((await page.locator(selector).all()).map(async (el) => (await el.getAttribute('data-state')) ?? ''));
  type Styled = { getComputedStyle(el: unknown): { borderTopWidth: string } };

  it('marks the states describeRun reports, shows a call\'s stage on a click, and loads nothing', async () => {
    expect(run.states).toEqual(['suspending']);
    expect(run.calls.map((c) => [c.toolCallId, c.stage, c.states])).toEqual([['pay-1', 'approval', ['approval.awaitingApproval']]]);
    await page.goto(url);

    // The run chart: exactly the run's states are marked, and they are drawn, not just tagged.
    expect(await dataStates('[data-chart="run"] [data-current="true"]')).toEqual(run.states);
    const now = page.locator('[data-chart="run"] [data-state="suspending"]');
    expect(await now.isVisible()).toBe(true);
    expect(await now.evaluate((el) => (globalThis as unknown as Styled).getComputedStyle(el).borderTopWidth)).toBe('3px');
    // The waiting call's chart, at its stage.
    const callChart = page.locator('[data-chart="call"][data-call-id="pay-1"]');
    expect(await callChart.getAttribute('data-stage')).toBe('approval');
    expect(await dataStates('[data-chart="call"][data-call-id="pay-1"] [data-current="true"]')).toEqual(['approval.awaitingApproval']);
    expect(await dataStates('[data-chart="call"][data-call-id="pay-1"] [data-active="true"]')).toEqual(['approval']);

    // First the run's present; then a click on the call shows its stage, states and receipt.
    const nowDetail = page.locator('#d-now');
    expect(await nowDetail.isVisible()).toBe(true);
    await page.locator('#timeline-panel .call-ref[data-call-id="pay-1"]').click();
    const callDetail = page.locator('.detail[data-call-id="pay-1"]');
    expect(await callDetail.isVisible()).toBe(true);
    expect(await nowDetail.isVisible()).toBe(false);
    expect(await callDetail.locator('[data-field="stage"]').textContent()).toBe('approval');
    expect(await callDetail.locator('[data-field="states"]').textContent()).toBe('approval.awaitingApproval');
    expect(await callDetail.locator('[data-field="receipt"]').textContent()).toBe('none');
    expect(await callDetail.locator('[data-field="outcome"]').textContent()).toBe('open');
    expect(await callDetail.textContent()).toContain(`approval ${run.pendingApprovals[0]!.approvalId}`);
    expect(await callChart.getAttribute('class')).toContain('selected');
    await mkdir('test-artifacts', { recursive: true });
    await page.screenshot({ path: 'test-artifacts/run-chart-call.png', fullPage: true });

    // A step of the history: its calls and how each ended.
    await page.locator('#timeline-panel button.step[data-detail="d-step-0"]').click();
    const stepDetail = page.locator('#d-step-0');
    expect(await stepDetail.isVisible()).toBe(true);
    expect(await callDetail.isVisible()).toBe(false);
    expect(await stepDetail.textContent()).toContain('lookup lookup-1: answered, receipt completed');
    // A call that has ended says so, and has no chart state to mark.
    await page.locator('#timeline-panel .call-ref[data-call-id="lookup-1"]').click();
    expect(await page.locator('.detail[data-call-id="lookup-1"] [data-field="stage"]').textContent()).toContain('ended');
    await page.screenshot({ path: 'test-artifacts/run-chart.png', fullPage: true });

    expect(requests).toEqual([url]);
    expect(problems).toEqual([]);
  });
});

/**
 * The web example in a real browser: Debian's Chromium, headless, driven by
 * playwright-core. A person sends the prompt, watches the text stream in,
 * reloads mid-stream, answers the approval and the client tool together, and
 * sees the completed answer and the run panel.
 *
 * Without /usr/bin/chromium the test fails in CI (.ci/run installs it) and is
 * skipped elsewhere, with a notice.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInMemoryAgentStreamJournal } from 'cairn/ui';
import { INTRO, answerFor } from '../../examples/web/agent.js';
import { buildPage, createWebExampleServer, type ApiRequestRecord } from '../../examples/web/server.js';
import { browserTestRuns, launchChromium } from './chromium.js';

const RUNS = browserTestRuns("the web example's browser test");

/** Milliseconds between the scripted model's words: slow enough to reload mid-stream, fast enough for a short test. */
const WORD_DELAY_MS = 100;
const WAIT = { timeout: 15_000 };

/** Polls `check` (the project typechecks without the DOM library, so no page-side predicates). */
async function until(check: () => Promise<boolean>, timeoutMs = WAIT.timeout): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms.`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe.skipIf(!RUNS)('the web example in Chromium', () => {
  let server: Server;
  let context: BrowserContext;
  let page: Page;
  let base: string;
  const temp: string[] = [];
  const requests: ApiRequestRecord[] = [];
  const pageErrors: string[] = [];
  const journal = createInMemoryAgentStreamJournal();

  beforeAll(async () => {
    const dist = await mkdtemp(join(tmpdir(), 'cairn-web-dist-'));
    const profile = await mkdtemp(join(tmpdir(), 'cairn-chromium-'));
    temp.push(dist, profile);
    const [, launched] = await Promise.all([
      buildPage(dist),
      launchChromium(profile, 900),
    ]);
    context = launched;
    server = createWebExampleServer({ distDir: dist, wordDelayMs: WORD_DELAY_MS, journal, onApiRequest: (r) => requests.push(r) });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (error) => pageErrors.push(error.message));
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    server?.closeAllConnections();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    for (const dir of temp) await rm(dir, { recursive: true, force: true });
  });

  const textOf = (step: number) => page.locator(`#parts .part-text[data-step="${step}"]`).allTextContents();
  const toolStates = async () => Promise.all((await page.locator('#parts .part-tool').all())
    .map(async (el) => `${await el.getAttribute('data-tool')}:${await el.getAttribute('data-state')}`));
  const runIdOnPage = () => page.locator('.cairn-run-panel').getAttribute('data-run-id');

  it('streams, survives a reload mid-stream, and resumes with both answers in one request', async () => {
    await page.goto(base);
    await page.locator('#prompt').fill('Publish the release notes, please.');
    await page.locator('#send').click();

    // Text streams in word by word.
    await until(async () => (await textOf(0)).join('').split(' ').length >= 4);
    const before = (await textOf(0)).join('');
    expect(INTRO.startsWith(before)).toBe(true);
    expect(before.length).toBeLessThan(INTRO.length);
    const runId = await runIdOnPage();
    expect(runId).toMatch(/^web-/);

    // Reload while the model is still writing: the page comes back from sessionStorage and follows the live leg.
    await page.reload();
    expect((await journal.head(runId!))?.ended).toBe(false);
    await page.locator('#pending').waitFor(WAIT);
    expect(requests.some((r) => r.method === 'GET' && new URL(r.url, base).searchParams.get('runId') === runId)).toBe(true);
    // Whole and once: the replay overlapping what was streamed applies no frame twice.
    expect(await textOf(0)).toEqual([INTRO]);

    // The approval and the client call wait together.
    expect(await page.locator('#pending .approval').count()).toBe(1);
    expect(await page.locator('#pending .client-call').count()).toBe(1);
    expect(await toolStates())
      .toEqual(['publish:awaiting-approval', 'pickColor:awaiting-client']);
    expect(await page.locator('.cairn-run-panel').getAttribute('data-status')).toBe('suspended');
    await mkdir('test-artifacts', { recursive: true });
    await page.screenshot({ path: 'test-artifacts/web-example-pending.png', fullPage: true });

    // Both answers, then one resume.
    expect(await page.locator('#submit-answers').isDisabled()).toBe(true);
    await page.locator('#pending .approval .approve').click();
    await page.locator('#pending .client-answer').fill('teal');
    await page.locator('#submit-answers').click();

    const answer = answerFor('teal', true);
    await page.locator('#output').waitFor(WAIT);
    expect(await page.locator('#output').textContent()).toBe(answer);
    expect(await textOf(0)).toEqual([INTRO]);
    expect(await textOf(1)).toEqual([answer]);
    expect(await toolStates())
      .toEqual(['publish:done', 'pickColor:done']);
    await page.locator('.cairn-run-panel[data-status="completed"]').waitFor(WAIT);
    expect(await page.locator('.cairn-run-panel').getAttribute('data-run-id')).toBe(runId);
    await page.screenshot({ path: 'test-artifacts/web-example.png', fullPage: true });

    // The page links to the same run on its chart, served by the example.
    const chartLink = await page.locator('#chart-link').getAttribute('href');
    expect(chartLink).toBe(`/api/chart?runId=${encodeURIComponent(runId!)}`);

    const posts = requests.filter((r) => r.method === 'POST');
    expect(posts[0]!.body).toEqual({ prompt: 'Publish the release notes, please.' });
    const resumes = posts.filter((r) => typeof (r.body as { runId?: unknown }).runId === 'string');
    expect(resumes).toHaveLength(1);
    expect(resumes[0]!.body).toEqual({
      runId,
      approvalResponses: [{ approvalId: expect.any(String), token: expect.any(String), approved: true }],
      clientToolResults: [{ toolCallId: expect.any(String), output: 'teal' }],
    });
    expect(posts).toHaveLength(2);
    expect(pageErrors).toEqual([]);
  });
});

/**
 * Debian's Chromium for the browser tests, headless, driven by playwright-core.
 * Without /usr/bin/chromium a browser test fails on CI (.ci/run installs it)
 * and is skipped elsewhere, with a notice.
 */
import { existsSync } from 'node:fs';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
const inCI = process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';
const hasChromium = existsSync(CHROMIUM);

/** Whether the browser test `what` registers: with Chromium, or on CI (where the launch then fails); otherwise it warns. */
export function browserTestRuns(what: string): boolean {
  if (!hasChromium && !inCI) console.warn(`[test/browser] ${CHROMIUM} is missing: ${what} is skipped (apt-get install chromium to run it).`);
  return hasChromium || inCI;
}

/** A headless Chromium on the profile directory `profile`, its window `width` wide and 900 high. */
export async function launchChromium(profile: string, width = 1280): Promise<BrowserContext> {
  if (!hasChromium) throw new Error(`${CHROMIUM} is missing; .ci/run installs Debian's chromium package when it can.`);
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width, height: 900 },
  });
}

/** The context's first page, with every request's URL put in `requests` and every page error, console error and warning in `problems`. */
export async function watchedPage(context: BrowserContext, requests: string[], problems: string[]): Promise<Page> {
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('request', (request) => requests.push(request.url()));
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') problems.push(`console ${message.type()}: ${message.text()}`);
  });
  return page;
}

/**
 * Cairn installed into someone else's project, as README says to do it today
 * (the name `cairn` on the npm registry belongs to another package): pack the
 * built package, install the tarball into a fresh project, and run a program
 * there that imports it by its public entry points.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'cairn-install-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const program = `
import { createInMemoryAgentRunStore, runAgent, resumeAgent } from 'cairn/agent';
import { createOpenAI } from 'cairn/openai';
import { createMockModel } from 'cairn/testing';

const store = createInMemoryAgentRunStore();
const options = {
  model: createMockModel({ responses: [{ toolCalls: [{ toolName: 'publish', args: {} }] }, { text: 'Published.' }] }),
  prompt: 'Publish.',
  session: { store, runId: 'r-1', scope: 't' },
  tools: { publish: { parameters: { type: 'object', properties: {} }, needsApproval: true, execute: () => 'ok' } },
};
const first = await runAgent(options);
const approvalResponses = first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true }));
const done = await resumeAgent({ ...options, approvalResponses });
const down = createOpenAI({ apiKey: 'k-000000', fetch: async () => new Response('{}', { status: 503 }) })('gpt-4.1');
const failed = await runAgent({ model: down, prompt: 'Hi.', maxRetries: 0 });
console.log(first.status, done.status, done.text, failed.status, failed.retry.cause);
`;

describe('installing the packed package into a fresh project', () => {
  it('runs a program that imports cairn/agent, cairn/openai and cairn/testing', () => {
    // dist/ is built by `npm test` before the suites run; pack it as it is.
    execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', work], { cwd: root, stdio: 'pipe' });
    const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'));
    expect(tarball).toBeDefined();
    const project = join(work, 'app');
    execFileSync('mkdir', ['-p', project]);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    // No install scripts: this program needs no native module (better-sqlite3 serves only cairn/ops/sqlite).
    execFileSync('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', join(work, tarball!)], { cwd: project, stdio: 'pipe' });
    writeFileSync(join(project, 'main.js'), program);
    const out = execFileSync(process.execPath, ['main.js'], { cwd: project, encoding: 'utf8' });
    expect(out.trim()).toBe('suspended completed Published. failed provider-error');
  }, 240_000);
});

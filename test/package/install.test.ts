/**
 * Cairn installed into someone else's project, as README says to do it today
 * (the name `cairn` on the npm registry belongs to another package): pack the
 * package with `npm pack` (its prepack script builds it), install the tarball
 * into a fresh project, and use it there as a user would: the install asks to
 * review no install script, a strict `tsc` with `skipLibCheck: false` accepts
 * every entry point's declarations without @types/node, and a program runs.
 *
 * The pack happens in a copy of the package's own files (node_modules linked),
 * so it builds what a clean clone would and leaves this tree's dist/ alone.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'cairn-install-'));
const project = join(work, 'app');
afterAll(() => rmSync(work, { recursive: true, force: true }));

const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
/** Every public entry point, from package.json, so one added later is checked too. */
const subpaths = Object.keys(manifest.exports).filter((k) => k !== './package.json').map((k) => (k === '.' ? 'cairn' : `cairn/${k.slice(2)}`));
/** React's types come from @types/react (an optional peer, as react is): the version this repository tests with. */
const reactTypes = (JSON.parse(readFileSync(join(root, 'node_modules/@types/react/package.json'), 'utf8')) as { version: string }).version;

let installOutput = '';

beforeAll(() => {
  const source = join(work, 'cairn');
  mkdirSync(source);
  for (const entry of ['package.json', 'README.md', 'bin', 'scripts', 'src', 'machines', 'tsconfig.json', 'tsconfig.build.json']) {
    cpSync(join(root, entry), join(source, entry), { recursive: true });
  }
  symlinkSync(join(root, 'node_modules'), join(source, 'node_modules'), 'dir');
  execFileSync('npm', ['pack', '--pack-destination', work], { cwd: source, stdio: 'pipe' });
  const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'));
  if (!tarball) throw new Error('npm pack wrote no tarball');

  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  // A plain install, scripts not ignored: what it would run or ask to review is what a user sees.
  const install = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', join(work, tarball), `@types/react@${reactTypes}`], {
    cwd: project, encoding: 'utf8',
  });
  installOutput = `${install.stdout}\n${install.stderr}`;
  if (install.status !== 0) throw new Error(`npm install failed:\n${installOutput}`);
}, 180_000);

describe('installing the packed package into a fresh project', () => {
  it('asks to review no install script, and brings no native addon nor Node type package', () => {
    expect(installOutput).not.toMatch(/install-scripts|install script/i);
    const installed = readdirSync(join(project, 'node_modules'));
    expect(installed).not.toContain('msgpackr-extract');
    expect(installed).not.toContain('better-sqlite3');
    expect(existsSync(join(project, 'node_modules/@types/node'))).toBe(false);
    // msgpackr is packed inside Cairn, where Node finds it from the codec.
    expect(existsSync(join(project, 'node_modules/cairn/dist/node_modules/msgpackr/package.json'))).toBe(true);
  });

  it('type-checks a file importing every entry point, strict and with skipLibCheck false', () => {
    const lines = subpaths.map((s, i) => `import * as entry${i} from '${s}';`);
    lines.push(`export const entries = [${subpaths.map((_, i) => `entry${i}`).join(', ')}];`);
    // A use of the types, not only the names: a store's save plan rows are plain bytes.
    lines.push(`import type { SavePlan } from 'cairn/stores';`);
    lines.push(`export const head = (plan: SavePlan): Uint8Array => plan.head;`);
    writeFileSync(join(project, 'all.ts'), `${lines.join('\n')}\n`);
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, skipLibCheck: false, noEmit: true },
      files: ['all.ts'],
    }));
    const tsc = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: project, encoding: 'utf8' });
    expect(`${tsc.stdout}${tsc.stderr}`).toBe('');
    expect(tsc.status).toBe(0);
  });

  it('runs a program that imports cairn/agent, cairn/openai, cairn/testing and cairn/stores', () => {
    writeFileSync(join(project, 'main.js'), program);
    const out = execFileSync(process.execPath, ['main.js'], { cwd: project, encoding: 'utf8' });
    expect(out.trim()).toBe('suspended completed Published. failed provider-error true');
  });

  it('says what to install when the CLI runs without better-sqlite3', () => {
    const cli = spawnSync(process.execPath, [join(project, 'node_modules/cairn/bin/cairn.js'), 'runs'], { cwd: project, encoding: 'utf8' });
    expect(cli.status).toBe(2);
    expect(cli.stderr).toContain('npm install better-sqlite3');
  });
});

const program = `
import { createInMemoryAgentRunStore, runAgent, resumeAgent } from 'cairn/agent';
import { createOpenAI } from 'cairn/openai';
import { createMockModel } from 'cairn/testing';
import { loadRecord, planSave } from 'cairn/stores';

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
// The stored record's bytes, through the packed msgpackr: encoded by a save plan and read back.
const envelope = await store.load('r-1');
const plan = planSave(envelope, undefined);
const back = loadRecord('r-1', {
  head: plan.head, messages: plan.messages, receipts: plan.receipts,
  transcriptDigest: plan.next.transcriptDigest, receiptsDigest: plan.next.receiptsDigest,
});
// Keys sorted: the record is compared by value, not by the order its head rebuilds keys in.
const canon = (v) => JSON.stringify(v, (_, x) => (x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1))) : x));
const same = plan.messages.length > 0 && envelope.status === 'completed' && canon(back) === canon(envelope);
console.log(first.status, done.status, done.text, failed.status, failed.retry.cause, same);
`;

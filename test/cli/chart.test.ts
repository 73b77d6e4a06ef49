/**
 * `cairn chart` on a SQLite store holding corpus records (stored by an application, so without
 * the CLI's run metadata) and a demo run (with it): each format, --out, --open with and without
 * an opener, the usage errors, and the store's files unchanged byte for byte throughout.
 */
import { chmodSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { AgentRunEnvelope } from 'cairn/agent';
import { describeRun, renderRunChartHtml, runMachine, toDot, toMermaid, toolCallMachine } from 'cairn/machines';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { ROOT, cairn, json, snapshotDir, tempDir, write } from './helpers.js';

const CORPUS = join(ROOT, 'test', 'compat', 'corpus');
const record = (name: string) => JSON.parse(readFileSync(join(CORPUS, name), 'utf8')) as AgentRunEnvelope;
const approval = record('run-v2/suspended-approval.json');
const both = record('run-v1/suspended-approval-and-client-call.json');

const cwd = tempDir('cairn-chart-');
const out = tempDir('cairn-chart-out-');
const STORE = ['--store', 'runs.sqlite'];
let before: Record<string, string>;
/** The approval record as the CLI reads it: with the revision that saved each part. */
let stored: AgentRunEnvelope;

beforeAll(async () => {
  const ops = createSqliteOpsStore({ path: join(cwd, 'runs.sqlite') });
  for (const envelope of [approval, both, record('run-v2/completed.json')]) {
    for (let revision = 1; revision <= envelope.revision; revision++) await ops.agentRuns.save({ ...envelope, revision });
  }
  stored = (await ops.agentRuns.load(approval.runId, { scope: approval.scope, saves: true }))!;
  ops.close();
  // A run cairn started: read under the scope it recorded.
  expect((await cairn(['demo', '--run-id', 'demo1', '--quiet', ...STORE], { cwd })).code).toBe(3);
  before = snapshotDir(cwd);
}, 60_000);

/** Every command here leaves the store directory exactly as it was. */
async function chart(args: string[], env: Record<string, string> = {}) {
  const result = await cairn(['chart', ...args], { cwd, env });
  expect(snapshotDir(cwd), 'the store directory is unchanged').toEqual(before);
  return result;
}

describe('cairn chart', () => {
  it('prints the HTML page to stdout by default: the same page renderRunChartHtml draws', async () => {
    const result = await chart([approval.runId, ...STORE]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(renderRunChartHtml(stored));
    expect(result.stdout).toContain('<dt>Saved</dt><dd>turn in revision 1</dd>');
    expect(result.stderr).toBe('');
  });

  it('--format mermaid and dot: the run chart at its states, then each open call at its stage', async () => {
    const run = describeRun(both);
    expect(run.calls).toHaveLength(2);
    for (const [format, draw, opening] of [['mermaid', toMermaid, 'stateDiagram-v2'], ['dot', toDot, 'digraph']] as const) {
      const result = await chart([both.runId, ...STORE, '--format', format]);
      expect(result.code, result.stderr).toBe(0);
      const comment = format === 'mermaid' ? '%%' : '//';
      expect(result.stdout).toBe([
        `${comment} run ${run.runId}: suspended, states suspending\n${draw(runMachine, { highlight: run.states })}`,
        ...run.calls.map((c) => `${comment} call ${c.toolCallId} (${c.toolName}, step ${c.modelStep}): stage ${c.stage}, states ${c.states.join(', ')}\n${draw(toolCallMachine, { highlight: c.states })}`),
      ].join('\n'));
      expect(result.stdout.split('\n').filter((l) => l.startsWith(opening))).toHaveLength(3);
    }
  });

  it('--format json: describeRun of the stored run; a cairn run is read under its recorded scope', async () => {
    const result = await chart([approval.runId, ...STORE, '--format', 'json']);
    expect(result.code).toBe(0);
    expect(json(result)).toEqual(JSON.parse(JSON.stringify(describeRun(stored))));
    expect(json(result).steps[0]).toMatchObject({ savedAt: 1 });
    const demo = json(await chart(['demo1', ...STORE, '--format', 'json']));
    expect(demo).toMatchObject({ runId: 'demo1', status: 'suspended', states: ['suspending'] });
    expect(demo.calls.map((c: { stage: string }) => c.stage)).toEqual(['approval']);
  });

  it('--call draws a call that has ended too', async () => {
    const result = await chart([approval.runId, ...STORE, '--format', 'mermaid', '--call', 'lookup-1']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('%% call lookup-1 (lookup, step 0): ended, no chart state kept\nstateDiagram-v2');
    const html = await chart([approval.runId, ...STORE, '--call', 'lookup-1']);
    expect(html.stdout).toBe(renderRunChartHtml(stored, { callId: 'lookup-1' }));
  });

  it('--out writes the file, and nothing to stdout', async () => {
    const file = join(out, 'run.html');
    const result = await chart([approval.runId, ...STORE, '--out', file]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(`wrote ${file}\n`);
    expect(readFileSync(file, 'utf8')).toBe(renderRunChartHtml(stored));
    const dot = join(out, 'run.dot');
    expect((await chart([approval.runId, ...STORE, '--format', 'dot', '--out', dot])).code).toBe(0);
    expect(readFileSync(dot, 'utf8')).toMatch(/^\/\/ run corpus-suspended-approval: suspended, states suspending\ndigraph "run" \{/);
  });

  it('--open hands the file to xdg-open, and says so when there is none', async () => {
    const bin = tempDir('cairn-chart-bin-');
    write(bin, { 'xdg-open': `#!/bin/sh\necho "$1" > ${JSON.stringify(join(out, 'opened.txt'))}\n` });
    chmodSync(join(bin, 'xdg-open'), 0o755);
    const file = join(out, 'open.html');
    const opened = await chart([approval.runId, ...STORE, '--out', file, '--open'], { PATH: bin });
    expect(opened.code, opened.stderr).toBe(0);
    expect(opened.stderr).toContain('opened it with xdg-open');
    await expect.poll(() => readdirSync(out).includes('opened.txt')).toBe(true);
    await expect.poll(() => readFileSync(join(out, 'opened.txt'), 'utf8')).toBe(`${file}\n`);

    const missing = await chart([approval.runId, ...STORE, '--out', file, '--open'], { PATH: tempDir('cairn-chart-empty-') });
    expect(missing.code).toBe(0);
    expect(missing.stderr).toContain(`could not open it: no xdg-open on this system; open ${file} yourself.`);
  });

  it('is a usage error (exit 2) for an unknown run, call or format, and a missing store', async () => {
    const cases: [string[], string][] = [
      [['nope', ...STORE], 'There is no run nope in runs.sqlite.'],
      [[approval.runId, ...STORE, '--call', 'nope'], `Run ${approval.runId} has no call nope.`],
      [[approval.runId, ...STORE, '--format', 'svg'], '--format takes one of html, mermaid, dot, json; got "svg".'],
      [[...STORE], 'cairn chart needs the run id'],
      [['x', '--store', 'missing.sqlite'], 'There is no run store at missing.sqlite'],
    ];
    for (const [args, message] of cases) {
      const result = await chart(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toContain(message);
      expect(result.stdout).toBe('');
    }
    const help = await chart(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: cairn chart <runId>');
  });
});

/**
 * Safe answers for a careful operator and a careless one, on real processes:
 * Ctrl-C drains a run at its next step (resumable, exit 3); an approval takes
 * one verdict; a call cut off under an approval is retried under it; a
 * refused resume says the run still waits; a busy run says when its lease
 * lapses; a secret in a tools module's load error is redacted.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cairn, json, KILLED_LEASE_TTL_MS, leaseLapse, snapshotDir, start, startUntil, stderrShows, storedRun, tempDir, waitForFile, waitUntil, write, type Result } from './helpers.js';

const lines = (path: string) => readFileSync(path, 'utf8').trim().split('\n');

describe('Ctrl-C on cairn run and cairn resume', () => {
  /** Four steps of a slow tool, each logged once; then the answer. */
  const SLOW = `import { appendFileSync } from 'node:fs';
export const tools = {
  step: {
    description: 'One slow step.',
    parameters: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
    execute: async ({ n }) => {
      appendFileSync(new URL('./steps.log', import.meta.url), 'step ' + n + '\\n');
      await new Promise((r) => setTimeout(r, 300));
      return { done: n };
    },
  },
};
`;
  const model = { turns: [...[1, 2, 3, 4].map((n) => ({ toolCalls: [{ toolName: 'step', args: { n } }] })), { text: 'Four steps done.' }] };

  it('the first Ctrl-C stops the run at the next step: drained and resumable (3), with the command that goes on; no step runs twice', async () => {
    const cwd = tempDir();
    write(cwd, { 'model.json': model, 'tools.mjs': SLOW });
    // A short lease: renewals (a third of it) are when the leg hears the drain.
    const run = start(['run', 'Do four steps.', '--model', 'model.json', '--tools', 'tools.mjs', '--run-id', 'job', '--lease-ttl', '300'], { cwd });
    await stderrShows(run.child, 'cairn: calling step {"n":1}');
    run.child.kill('SIGINT');
    const stopped = await run.done;
    expect(stopped.code, stopped.stderr).toBe(3);
    expect(stopped.stderr).toContain('cairn: stopping at the next step boundary; the run stays resumable. Press Ctrl-C again to abort it.');
    expect(stopped.stdout).toContain('Run job is waiting (pending, drained, exit 3).');
    expect(stopped.stdout).toContain('go on:   npx cairn resume job');
    const done = lines(join(cwd, 'steps.log'));
    expect(done.length).toBeLessThan(4);
    expect(json(await cairn(['inspect', 'job', '--json'], { cwd }))).toMatchObject({ status: 'drained', outcome: 'pending' });

    // cairn resume drains the same way; the run goes on where it stopped, and every step runs once.
    const resumed = start(['resume', 'job', '--lease-ttl', '300', '--quiet'], { cwd });
    await waitForLines(join(cwd, 'steps.log'), done.length + 1);
    resumed.child.kill('SIGINT');
    const second = await resumed.done;
    expect(second.code, second.stderr).toBe(3);
    // --quiet turns progress off, not the answer to the user's Ctrl-C.
    expect(second.stderr).toContain('stopping at the next step boundary');
    expect(second.stdout).toContain('(pending, drained, exit 3)');

    const last = await cairn(['resume', 'job', '--json'], { cwd });
    expect(last.code, last.stderr).toBe(0);
    expect(json(last).output).toBe('Four steps done.');
    expect(lines(join(cwd, 'steps.log'))).toEqual(['step 1', 'step 2', 'step 3', 'step 4']);
  });
});

const waitForLines = (path: string, count: number) =>
  waitUntil(() => existsSync(path) && lines(path).length >= count, `${path} did not reach ${count} lines`);

/** The demo waiting for its approval, and that approval's id. */
async function waitingDemo(): Promise<{ cwd: string; approvalId: string }> {
  const cwd = tempDir();
  const demo = await cairn(['demo', '--run-id', 'd', '--quiet', '--json'], { cwd });
  expect(demo.code, demo.stderr).toBe(3);
  return { cwd, approvalId: json(demo).pending[0].approvalId };
}

describe('verdicts', () => {
  it('--approve X --deny X, in either order, is a usage error (2) that writes nothing and runs nothing', async () => {
    const { cwd, approvalId } = await waitingDemo();
    const before = snapshotDir(cwd);
    for (const args of [['--approve', approvalId, '--deny', approvalId], ['--deny', approvalId, '--reason', 'no', '--approve', approvalId]]) {
      const result = await cairn(['resume', 'd', ...args], { cwd });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(`--approve ${approvalId} and --deny ${approvalId}: an approval takes one verdict`);
      expect(snapshotDir(cwd)).toEqual(before); // no deploy log, the store byte for byte
    }
    for (const [args, message] of [
      [['--retry', 'c1', '--reconcile', 'c1=1'], '--retry c1 and --reconcile c1: a call is either run again or recorded'],
      [['--reconcile', 'c1=1', '--reconcile-error', 'c1="x"'], '--reconcile c1 is given twice'],
      [['--client-result', 'c1=1', '--client-result', 'c1=2'], '--client-result c1 is given twice'],
    ] as const) {
      const result = await cairn(['resume', 'd', ...args], { cwd });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(message);
    }
    expect(snapshotDir(cwd)).toEqual(before);
  });
});

/** `charge` needs approval; its first call marks that it started and holds until the process is killed. */
const APPROVED_TOOLS = `import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
const at = (name) => new URL('./' + name, import.meta.url);
export const tools = {
  charge: {
    description: 'Charge an order.',
    parameters: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
    needsApproval: true,
    execute: async ({ order }) => {
      appendFileSync(at('effects.log'), 'charged ' + order + '\\n');
      if (!existsSync(at('started'))) {
        writeFileSync(at('started'), '');
        await new Promise(() => setInterval(() => {}, 1000));
      }
      return { charged: order };
    },
  },
};
`;

describe('retrying a call a person approved', () => {
  it('after a SIGKILL during the approved effect, inspect shows the approval and --retry runs the call under it (0)', async () => {
    const cwd = tempDir();
    write(cwd, {
      'model.json': { turns: [{ toolCalls: [{ toolName: 'charge', args: { order: '7' } }] }, { text: 'Charged order 7.' }] },
      'tools.mjs': APPROVED_TOOLS,
    });
    const first = await cairn(['run', 'Charge order 7.', '--model', 'model.json', '--tools', 'tools.mjs', '--run-id', 'o7', '--json'], { cwd });
    expect(first.code, first.stderr).toBe(3);
    const approvalId: string = json(first).pending[0].approvalId;

    const approving = await startUntil(['resume', 'o7', '--approve', approvalId, '--lease-ttl', String(KILLED_LEASE_TTL_MS)], { cwd }, join(cwd, 'started'));
    approving.child.kill('SIGKILL');
    expect((await approving.done).signal).toBe('SIGKILL');
    await leaseLapse();

    const inspected = await cairn(['inspect', 'o7', '--json'], { cwd });
    expect(inspected.code).toBe(3);
    expect(json(inspected).pending).toContainEqual(expect.objectContaining({
      kind: 'unknown-effect', toolCallId: 'call_1_1', approval: expect.objectContaining({ approvalId, approved: true }),
    }));
    const shown = await cairn(['inspect', 'o7'], { cwd });
    expect(shown.stdout).toContain(`(it ran under approval ${approvalId}, approved: a retry runs it under that verdict, with no new one)`);
    expect(shown.stdout).toContain('run it again:    npx cairn resume o7 --retry call_1_1\n');

    // The opposite verdict is refused before anything is written.
    const store = join(cwd, '.cairn', 'runs.sqlite');
    const before = storedRun(store, 'o7');
    const denied = await cairn(['resume', 'o7', '--retry', 'call_1_1', '--deny', approvalId], { cwd });
    expect(denied.code).toBe(2);
    expect(denied.stderr).toContain(`--deny ${approvalId}: that approval was approved already, and an approval is answered once`);
    expect(denied.stderr).toContain("npx cairn resume o7 --reconcile 'call_1_1=<json>'");
    expect(storedRun(store, 'o7')).toEqual(before);

    const retried = await cairn(['resume', 'o7', '--retry', 'call_1_1', '--json'], { cwd });
    expect(retried.code, retried.stderr).toBe(0);
    const report = json(retried);
    expect(report).toMatchObject({ outcome: 'completed', output: 'Charged order 7.' });
    expect(report.messages).toContainEqual(expect.objectContaining({ role: 'tool', toolCallId: 'call_1_1', content: { charged: '7' } }));
    expect(JSON.stringify(report.messages)).not.toContain('denied');
    expect(report.warnings).toEqual([]);
    expect(lines(join(cwd, 'effects.log'))).toEqual(['charged 7', 'charged 7']);
  });
});

describe('messages a person can act on', () => {
  it('a refused resume of a waiting run says it is unchanged and still waiting, not failed (1)', async () => {
    const { cwd, approvalId } = await waitingDemo();
    write(cwd, { 'other.json': { modelId: 'another-model', turns: [{ text: 'x' }] } });
    const store = join(cwd, '.cairn', 'runs.sqlite');
    const before = storedRun(store, 'd');
    for (const [args, code] of [[['--model', 'other.json'], 'binding_changed'], [['--client-result', 'nope=1'], 'invalid_options']] as const) {
      const result = await cairn(['resume', 'd', ...args], { cwd });
      expect(result.code, result.stderr).toBe(1);
      expect(result.stdout).toContain(`The resume of run d was refused (${code}, exit 1): nothing was written, and the run is unchanged and still waiting.`);
      expect(result.stdout).not.toContain('Run d failed');
      expect(result.stdout).toContain(`approve: npx cairn resume d --approve ${approvalId}`);
      expect(storedRun(store, 'd')).toEqual(before);
    }
  });

  it('a busy run (7) says who holds it and when the lease lapses', async () => {
    const cwd = tempDir();
    write(cwd, {
      'model.json': { turns: [{ toolCalls: [{ toolName: 'hold', args: {} }] }, { text: 'Held.' }] },
      'tools.mjs': `import { existsSync, writeFileSync } from 'node:fs';
export const tools = { hold: { parameters: { type: 'object' }, execute: async () => {
  writeFileSync(new URL('./started', import.meta.url), '');
  while (!existsSync(new URL('./release', import.meta.url))) await new Promise((r) => setTimeout(r, 10));
  return 'ok';
} } };
`,
    });
    const holder = start(['run', 'Hold.', '--model', 'model.json', '--tools', 'tools.mjs', '--run-id', 'held', '--lease-ttl', '20000'], { cwd });
    await waitForFile(join(cwd, 'started'));
    const asked = Date.now();
    const busy = await cairn(['resume', 'held'], { cwd });
    expect(busy.code, busy.stderr).toBe(7);
    const lapse = /Another process holds the run \(cairn-cli:[^)]+:(\d+)\)\. Its lease lapses at (\S+) \(in (\d+) s\) unless that process renews it/.exec(busy.stdout);
    expect(lapse, busy.stdout).not.toBeNull();
    expect(Number(lapse![1])).toBe(holder.child.pid);
    const at = Date.parse(lapse![2]!);
    expect(at).toBeGreaterThan(asked);
    expect(at).toBeLessThanOrEqual(Date.now() + 20_000);
    expect(busy.stdout).toContain('If that process is gone (killed, crashed), run the same command again after then.');
    write(cwd, { release: '' });
    expect((await holder.done).code).toBe(0);
  });
});

describe('a tools module that fails to load', () => {
  const SECRETS = ['sk-live-abcdef123456', 'hunter2hunter2'];
  const noSecret = (result: Result) => {
    for (const secret of SECRETS) {
      expect(result.stderr).not.toContain(secret);
      expect(result.stdout).not.toContain(secret);
    }
  };

  it('has its message redacted on stderr and in --json output, in run, doctor and resume', async () => {
    const cwd = tempDir();
    const throwing = "throw new Error('cannot reach billing with key sk-live-abcdef123456 (api_key=hunter2hunter2 was refused)');\n";
    write(cwd, { 'model.json': { turns: [{ text: 'ok' }] }, 'bad.mjs': throwing, 'good.mjs': 'export const tools = {};\n' });

    const run = await cairn(['run', 'x', '--model', 'model.json', '--tools', 'bad.mjs'], { cwd });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--tools bad.mjs: the module failed to load: cannot reach billing with key [redacted] ([redacted] was refused)');
    noSecret(run);

    for (const args of [['run', 'x', '--model', 'model.json', '--tools', 'bad.mjs', '--json'], ['doctor', '--model', 'model.json', '--tools', 'bad.mjs', '--json']]) {
      const result = await cairn(args, { cwd });
      expect(result.code).toBe(2);
      expect(json(result).error).toMatchObject({ code: 'usage', message: expect.stringContaining('[redacted]') });
      noSecret(result);
    }

    // A module recorded with the run that fails on a later resume.
    expect((await cairn(['run', 'x', '--model', 'model.json', '--tools', 'good.mjs', '--run-id', 'r'], { cwd })).code).toBe(0);
    writeFileSync(join(cwd, 'good.mjs'), throwing);
    const resumed = await cairn(['resume', 'r', '--json'], { cwd });
    expect(resumed.code).toBe(2);
    expect(json(resumed).error.message).toContain('[redacted]');
    noSecret(resumed);
  });
});

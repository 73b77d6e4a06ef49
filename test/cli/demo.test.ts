/**
 * `cairn demo` end to end, on real processes: it stops pending (exit 3) and
 * prints the command that approves the deploy; that command completes the run
 * (exit 0), and running it again deploys nothing more.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cairn, json, sh, tempDir } from './helpers.js';

const approveLine = (stdout: string): string => {
  const lines = stdout.split('\n').flatMap((l) => /(?:^|approve: +)(npx cairn resume \S+ --approve \S+.*)$/.exec(l.trim())?.[1] ?? []);
  expect(lines.length, stdout).toBeGreaterThan(0);
  return lines.at(-1)!;
};

describe('cairn demo', () => {
  it('stops for approval (3); the printed command completes it (0); running it again deploys once', async () => {
    const cwd = tempDir();
    const demo = await cairn(['demo'], { cwd });
    expect(demo.code, demo.stderr).toBe(3);
    expect(demo.stdout).toContain('is waiting (pending, exit 3)');
    // Progress on stderr, plain lines when it is not a terminal.
    expect(demo.stderr).toContain('cairn: calling check_build {"service":"web"}');
    expect(demo.stderr).toMatch(/cairn: approval needed: deploy .*\(approval \S+\)/);
    const command = approveLine(demo.stdout);
    expect(command).not.toContain('--store'); // the default store needs no flag
    expect(existsSync(join(cwd, '.cairn', 'runs.sqlite'))).toBe(true);
    const log = join(cwd, '.cairn', 'demo-deploys.log');
    expect(existsSync(log)).toBe(false);

    const approved = await sh(command, cwd);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toContain('Deployed web to production.');
    expect(readFileSync(log, 'utf8').trim().split('\n')).toHaveLength(1);

    const again = await sh(command, cwd);
    expect(again.code, again.stderr).toBe(0);
    expect(readFileSync(log, 'utf8').trim().split('\n')).toHaveLength(1);
  });

  it('with --store, the printed command names the store; --json prints the report that inspect and runs agree with', async () => {
    const cwd = tempDir();
    const demo = await cairn(['demo', '--store', 'state/ops.db', '--run-id', 'demo-1', '--json'], { cwd });
    expect(demo.code, demo.stderr).toBe(3);
    const report = json(demo);
    expect(report).toMatchObject({ kind: 'run', outcome: 'pending', status: 'suspended', runId: 'demo-1' });
    expect(report.pending).toEqual([expect.objectContaining({ kind: 'approval', toolName: 'deploy', args: { service: 'web', env: 'production' } })]);

    const inspected = await cairn(['inspect', 'demo-1', '--store', 'state/ops.db', '--json'], { cwd });
    expect(inspected.code).toBe(3);
    expect(json(inspected).pending).toEqual(report.pending);

    const human = await cairn(['inspect', 'demo-1', '--store', 'state/ops.db'], { cwd });
    const command = approveLine(human.stdout);
    expect(command).toBe(`npx cairn resume demo-1 --approve ${report.pending[0].approvalId} --store state/ops.db`);

    const suspended = await cairn(['runs', '--status', 'suspended', '--store', 'state/ops.db', '--json'], { cwd });
    expect(suspended.code).toBe(0);
    expect(json(suspended).runs.map((r: { runId: string }) => r.runId)).toEqual(['demo-1']);
    const table = await cairn(['runs', '--status', 'suspended', '--store', 'state/ops.db'], { cwd });
    expect(table.stdout).toMatch(/^demo-1\s+suspended\s+1\s+\S+Z$/m);

    const done = await sh(command, cwd);
    expect(done.code, done.stderr).toBe(0);
    expect(readFileSync(join(cwd, 'state', 'demo-deploys.log'), 'utf8')).toContain('deployed web to production (run demo-1)');
    const none = await cairn(['runs', '--status', 'suspended', '--store', 'state/ops.db', '--json'], { cwd });
    expect(json(none).runs).toEqual([]);
    const completed = await cairn(['runs', '--status', 'completed', '--store', 'state/ops.db', '--json'], { cwd });
    expect(json(completed).runs.map((r: { runId: string }) => r.runId)).toEqual(['demo-1']);
  });

  it('a denial goes on without deploying; an approval id the run does not wait on is ignored with a warning (3)', async () => {
    const cwd = tempDir();
    const report = json(await cairn(['demo', '--run-id', 'd', '--json', '--quiet'], { cwd }));
    const stray = await cairn(['resume', 'd', '--approve', 'not-pending', '--json'], { cwd });
    expect(stray.code).toBe(3);
    expect(json(stray).warnings.map((w: { code: string }) => w.code)).toContain('answer-ignored');

    const denied = await cairn(['resume', 'd', '--deny', report.pending[0].approvalId, '--reason', 'freeze week', '--json'], { cwd });
    expect(denied.code, denied.stderr).toBe(0);
    const tool = json(denied).messages.find((m: { role: string; toolName?: string }) => m.role === 'tool' && m.toolName === 'deploy');
    expect(JSON.stringify(tool)).toContain('freeze week');
    expect(existsSync(join(cwd, '.cairn', 'demo-deploys.log'))).toBe(false);
  });
});

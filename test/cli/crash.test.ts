/**
 * A `cairn run` killed (SIGKILL) while its tool works, then resumed from other
 * processes: the plain resume stops on the unknown effect (3), and `--retry`
 * or `--reconcile` completes the run (0).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cairn, json, KILLED_LEASE_TTL_MS, leaseLapse, start, startUntil, stderrShows, tempDir, waitForFile, write } from './helpers.js';

/** The first call marks that it started and then holds until the process is killed; later calls return. */
const BLOCKING_TOOLS = `import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
const started = new URL('./started', import.meta.url);
const effects = new URL('./effects.log', import.meta.url);
export const tools = {
  charge: {
    description: 'Charge an order once.',
    parameters: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
    execute: async ({ order }) => {
      appendFileSync(effects, 'charged ' + order + '\\n');
      if (!existsSync(started)) {
        writeFileSync(started, String(process.pid));
        await new Promise(() => setInterval(() => {}, 1000));
      }
      return { charged: order };
    },
  },
};
`;

async function killedRun(): Promise<string> {
  const cwd = tempDir();
  write(cwd, {
    'model.json': { turns: [{ toolCalls: [{ toolName: 'charge', args: { order: '7' } }] }, { text: 'Charged order 7.' }] },
    'tools.mjs': BLOCKING_TOOLS,
  });
  // A short lease: the killed process stops renewing it, and the next process takes the run once it lapsed.
  const run = await startUntil(['run', 'Charge order 7.', '--model', 'model.json', '--tools', 'tools.mjs', '--run-id', 'order-7',
    '--lease-ttl', String(KILLED_LEASE_TTL_MS)], { cwd }, join(cwd, 'started'));
  run.child.kill('SIGKILL');
  const killed = await run.done;
  await leaseLapse();
  expect(killed.signal).toBe('SIGKILL');
  expect(killed.stderr).toContain('cairn: calling charge {"order":"7"}');
  return cwd;
}

const effects = (cwd: string) => readFileSync(join(cwd, 'effects.log'), 'utf8').trim().split('\n');

describe('a run killed mid-way', () => {
  it('is listed as in progress with the unknown effect; a plain resume stops (3); --retry runs the call again (0)', async () => {
    const cwd = await killedRun();
    const inspected = await cairn(['inspect', 'order-7', '--json'], { cwd });
    expect(inspected.code).toBe(3);
    expect(json(inspected)).toMatchObject({ status: 'in-progress', outcome: 'pending' });
    expect(json(inspected).pending).toEqual([
      { kind: 'resume', resumeWith: null, phase: 'running' },
      expect.objectContaining({ kind: 'unknown-effect', toolName: 'charge', toolCallId: 'call_1_1' }),
    ]);
    const running = await cairn(['runs', '--status', 'running', '--json'], { cwd });
    expect(json(running).runs.map((r: { runId: string }) => r.runId)).toEqual(['order-7']);

    // From another process, with no repeated flags: the model and tools were recorded.
    const plain = await cairn(['resume', 'order-7'], { cwd });
    expect(plain.code, plain.stderr).toBe(3);
    expect(plain.stdout).toContain('(pending, tool-reconciliation-required, exit 3)');
    expect(plain.stdout).toContain('npx cairn resume order-7 --retry call_1_1');
    expect(plain.stdout).toContain("npx cairn resume order-7 --reconcile 'call_1_1=<json>'");
    expect(effects(cwd)).toEqual(['charged 7']);

    const retried = await cairn(['resume', 'order-7', '--retry', 'call_1_1', '--json'], { cwd });
    expect(retried.code, retried.stderr).toBe(0);
    expect(json(retried)).toMatchObject({ outcome: 'completed', output: 'Charged order 7.' });
    expect(effects(cwd)).toEqual(['charged 7', 'charged 7']);
  });

  it('--reconcile records what landed: the call never runs again (0)', async () => {
    const cwd = await killedRun();
    const reconciled = await cairn(['resume', 'order-7', '--reconcile', 'call_1_1={"charged":"7","by":"operator"}', '--json'], { cwd });
    expect(reconciled.code, reconciled.stderr).toBe(0);
    const report = json(reconciled);
    expect(report.outcome).toBe('completed');
    expect(report.messages).toContainEqual(expect.objectContaining({ role: 'tool', toolCallId: 'call_1_1', content: { charged: '7', by: 'operator' } }));
    expect(effects(cwd)).toEqual(['charged 7']);
  });
});

/** The call marks that it started, then holds until a `release` file appears. */
const HOLDING_TOOLS = `import { existsSync, writeFileSync } from 'node:fs';
const started = new URL('./started', import.meta.url);
const release = new URL('./release', import.meta.url);
export const tools = {
  charge: {
    description: 'Charge an order once.',
    parameters: { type: 'object', properties: {} },
    execute: async () => {
      writeFileSync(started, String(process.pid));
      while (!existsSync(release)) await new Promise((r) => setTimeout(r, 10));
      return { charged: true };
    },
  },
};
`;

describe('two processes on one run', () => {
  it('while one holds the run, another cairn resume exits 7 (busy) and writes nothing; the holder completes', async () => {
    const cwd = tempDir();
    write(cwd, {
      'model.json': { turns: [{ toolCalls: [{ toolName: 'charge', args: {} }] }, { text: 'Charged.' }] },
      'tools.mjs': HOLDING_TOOLS,
    });
    const holder = start(['run', 'Charge.', '--model', 'model.json', '--tools', 'tools.mjs', '--run-id', 'held'], { cwd });
    await waitForFile(join(cwd, 'started'));
    const before = json(await cairn(['inspect', 'held', '--json'], { cwd }));
    const second = await cairn(['resume', 'held'], { cwd });
    expect(second.code, second.stderr).toBe(7);
    expect(second.stdout).toContain('busy');
    expect(json(await cairn(['inspect', 'held', '--json'], { cwd }))).toEqual(before);
    write(cwd, { release: '' });
    const done = await holder.done;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toContain('Run held completed (exit 0).');
  });

  it('--lease-ttl below 30 ms is a usage error', async () => {
    const cwd = tempDir();
    write(cwd, { 'model.json': { turns: [{ text: 'x' }] } });
    const bad = await cairn(['run', 'x', '--model', 'model.json', '--lease-ttl', '5'], { cwd });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--lease-ttl');
  });
});

describe('Ctrl-C twice', () => {
  it('the first asks for a stop at the next step, the second aborts the leg: stored as cancelled (5)', async () => {
    const cwd = tempDir();
    write(cwd, { 'model.json': { turns: [{ text: 'Too slow.', delayMs: 60_000 }] } });
    const run = start(['run', 'Take your time.', '--model', 'model.json', '--run-id', 'slow'], { cwd });
    // Interrupt once the model call is under way (progress says so), not after a guessed delay.
    await stderrShows(run.child, 'cairn: step 1');
    run.child.kill('SIGINT');
    // The model call holds the step: the first Ctrl-C waits for its end, and says what a second one does.
    await stderrShows(run.child, 'Press Ctrl-C again to abort it.');
    run.child.kill('SIGINT');
    const result = await run.done;
    expect(result.code, result.stderr).toBe(5);
    expect(result.stderr).toContain('cairn: aborting.');
    expect(result.stdout).toContain('Run slow cancelled (aborted, exit 5).');
    const inspected = await cairn(['inspect', 'slow', '--json'], { cwd });
    expect(inspected.code).toBe(5);
    expect(json(inspected)).toMatchObject({ outcome: 'cancelled', reason: 'aborted' });
  });
});

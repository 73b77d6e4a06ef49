/**
 * The host process dies (SIGKILL) in the middle of a ticket workflow that
 * embeds an agent run; a new process restores the host actor from the
 * snapshot file it wrote, the child run goes on from its SQLite store, the
 * person's approval is sent, and the ticket ends with the run's output.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { HostArgs } from './host-process.js';
import { TRANSCRIPT_MARKERS } from './markers.js';

interface Line {
  event: string;
  [key: string]: unknown;
}

interface Host {
  child: ChildProcess;
  lines: Line[];
  /** Resolves with the first line of this event (or rejects when the process ends without it). */
  next(event: string): Promise<Line>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function startHost(args: HostArgs): Host {
  const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', 'test/embed/host-process.ts', JSON.stringify(args)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Line[] = [];
  const waiters: { event: string; resolve(l: Line): void; reject(e: Error): void }[] = [];
  let stderr = '';
  let buffered = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = JSON.parse(buffered.slice(0, nl)) as Line;
      buffered = buffered.slice(nl + 1);
      lines.push(line);
      for (const w of waiters.filter((w) => w.event === line.event)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) => {
    child.on('exit', (code, signal) => {
      for (const w of waiters.splice(0)) w.reject(new Error(`host exited (${code ?? signal}) before "${w.event}": ${stderr}`));
      resolve({ code, signal, stderr });
    });
  });
  return {
    child,
    lines,
    exited,
    next: (event) => {
      const seen = lines.find((l) => l.event === event);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => waiters.push({ event, resolve, reject }));
    },
  };
}

async function kill(host: Host) {
  host.child.kill('SIGKILL');
  const { signal } = await host.exited;
  expect(signal).toBe('SIGKILL');
}

function setupFiles(): Omit<HostArgs, 'mode' | 'approve'> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-embed-kill-'));
  dirs.push(dir);
  return { db: join(dir, 'runs.sqlite'), snapshotFile: join(dir, 'host.json'), ledger: join(dir, 'ledger.txt'), ttlMs: 1_000 };
}

const ledgerOf = (files: { ledger: string }) => (existsSync(files.ledger) ? readFileSync(files.ledger, 'utf8').trim().split('\n') : []);

/** Every snapshot either process wrote, as written. */
const snapshotLog = (files: { snapshotFile: string }) => readFileSync(`${files.snapshotFile}.log`, 'utf8').trim().split('\n');

function expectNoTranscript(files: { snapshotFile: string }) {
  const log = snapshotLog(files);
  expect(log.length).toBeGreaterThan(3);
  for (const snapshot of log) {
    for (const marker of TRANSCRIPT_MARKERS) expect(snapshot).not.toContain(marker);
  }
}

async function restoreAndFinish(files: Omit<HostArgs, 'mode' | 'approve'>) {
  const restored = startHost({ ...files, mode: 'restore', approve: true });
  const done = await restored.next('done');
  const exit = await restored.exited;
  expect(exit.code, exit.stderr).toBe(0);
  return { restored, done };
}

describe('a host process killed mid-run, restored from its snapshot file', () => {
  it('while a tool runs: the restored child resumes the run from its store, and the approved refund runs once', async () => {
    const files = setupFiles();
    const first = startHost({ ...files, mode: 'start', approve: true, hangIn: 'lookup' });
    await first.next('lookup-started');
    await kill(first);
    // The host was still working: its snapshot says so, and holds the run's identity, not the prompt any more.
    const persisted = JSON.parse(readFileSync(files.snapshotFile, 'utf8'));
    expect(persisted.value).toEqual({ handling: 'working' });
    expect(persisted.children.agent.snapshot.context).toMatchObject({ runId: 'ticket-4711', scope: 'support', phase: 'running', start: null });

    const { restored, done } = await restoreAndFinish(files);
    expect(done).toMatchObject({ value: 'answered', reply: 'Refunded 20 EUR on order A-17.' });
    // The dead process's lease had to lapse first; the idempotent lookup ran again, the refund once.
    expect(restored.lines.some((l) => l.event === 'waiting')).toBe(true);
    expect(ledgerOf(files)).toEqual(['lookup A-17', 'lookup A-17', 'refund A-17 20']);
    expectNoTranscript(files);
  }, 60_000);

  it('right after the run suspended: the restored child says again what it waits for, and the approval finishes the ticket', async () => {
    const files = setupFiles();
    const first = startHost({ ...files, mode: 'start', approve: false });
    await first.next('waiting');
    await kill(first);
    const persisted = JSON.parse(readFileSync(files.snapshotFile, 'utf8'));
    expect(persisted.value).toEqual({ handling: 'awaitingApproval' });
    expect(persisted.children.agent.snapshot.context).toMatchObject({ phase: 'waiting', start: null, inFlight: null });

    const { restored, done } = await restoreAndFinish(files);
    expect(done).toMatchObject({ value: 'answered', reply: 'Refunded 20 EUR on order A-17.' });
    expect(restored.lines.find((l) => l.event === 'waiting')).toMatchObject({ approvals: 1 });
    expect(ledgerOf(files)).toEqual(['lookup A-17', 'refund A-17 20']);
    expectNoTranscript(files);
  }, 60_000);

  it('while the approved refund runs: the restored child stops on the unknown effect, the operator records it, and it never runs again', async () => {
    const files = setupFiles();
    const first = startHost({ ...files, mode: 'start', approve: true, hangIn: 'refund' });
    await first.next('refund-landed');
    await kill(first);

    const { restored, done } = await restoreAndFinish(files);
    expect(restored.lines.find((l) => l.event === 'unsettled')).toMatchObject({ unknownEffects: ['pay'], landed: true });
    // No approval is asked again: the verdict was recorded before the effect.
    expect(restored.lines.some((l) => l.event === 'waiting')).toBe(false);
    expect(done).toMatchObject({ value: 'answered', reply: 'Refunded 20 EUR on order A-17.' });
    expect(ledgerOf(files)).toEqual(['lookup A-17', 'refund A-17 20']);
    expectNoTranscript(files);
  }, 60_000);
});

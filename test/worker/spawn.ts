/**
 * Worker child processes for the tests: spawn one, read its JSON lines as
 * they come, wait for a line, signal it, wait for its exit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { WorkerProcessArgs } from './worker-process.js';

export interface Line {
  event: string;
  [key: string]: unknown;
}

export interface Child {
  name: string;
  process: ChildProcess;
  lines: Line[];
  stderr: string[];
  /** The first line (seen or to come) that `match` accepts. */
  line(match: (line: Line) => boolean, what: string, timeoutMs?: number): Promise<Line>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs `command` (a node script and its arguments) as a child with the repository's TypeScript loader. */
export function spawnNode(name: string, script: string, argv: string[], wrap: string[] = [], env: NodeJS.ProcessEnv = {}): Child {
  const node = [process.execPath, '--conditions=source', '--import', 'tsx', script, ...argv];
  const [cmd, ...rest] = [...wrap, ...node];
  const child = spawn(cmd!, rest, { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const lines: Line[] = [];
  const stderr: string[] = [];
  const waiters: { match: (l: Line) => boolean; resolve: (l: Line) => void }[] = [];
  let buffered = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    buffered += chunk;
    let at: number;
    while ((at = buffered.indexOf('\n')) >= 0) {
      const text = buffered.slice(0, at);
      buffered = buffered.slice(at + 1);
      let line: Line;
      try {
        line = JSON.parse(text) as Line;
      } catch {
        line = { event: 'text', text };
      }
      lines.push(line);
      for (const waiter of waiters.splice(0)) {
        if (waiter.match(line)) waiter.resolve(line);
        else waiters.push(waiter);
      }
    }
  });
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => stderr.push(chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  return {
    name, process: child, lines, stderr, exited,
    line(match, what, timeoutMs = 30_000) {
      const seen = lines.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${name}: no line ${what}; stderr: ${stderr.join('').slice(-2000)}; lines: ${JSON.stringify(lines.slice(-20))}`)), timeoutMs);
        waiters.push({ match, resolve: (l) => { clearTimeout(timer); resolve(l); } });
      });
    },
  };
}

/** A worker-process.ts child, ready to take jobs when it resolves. */
export async function spawnWorker(args: WorkerProcessArgs, wrap: string[] = []): Promise<Child> {
  const child = spawnNode(args.name, 'test/worker/worker-process.ts', [JSON.stringify(args)], wrap);
  await Promise.race([
    child.line((l) => l.event === 'ready', 'ready', 60_000),
    child.exited.then((e) => { throw new Error(`${args.name} exited before it was ready (${JSON.stringify(e)}): ${child.stderr.join('')}`); }),
  ]);
  return child;
}

/** A job-end line of a worker for a run. */
export const jobEnd = (runId: string, outcome?: string) => (l: Line) =>
  l.event === 'worker' && l.type === 'job-end' && l.runId === runId && (outcome === undefined || l.outcome === outcome);

export function stopAll(children: Child[]): Promise<unknown> {
  return Promise.all(children.map(async (c) => {
    if (c.process.exitCode === null && c.process.signalCode === null) {
      c.process.kill('SIGCONT');
      c.process.kill('SIGKILL');
    }
    await c.exited;
  }));
}

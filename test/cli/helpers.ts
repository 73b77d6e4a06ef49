/**
 * Runs the real `cairn` binary (node bin/cairn.js, which loads dist/) in a
 * temporary working directory. Build first: `npm run build` (npm test does).
 */
import Database from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = join(ROOT, 'bin', 'cairn.js');

if (!existsSync(join(ROOT, 'dist', 'src', 'cli', 'main.js'))) {
  throw new Error('dist/src/cli/main.js is missing: run `npm run build` before the CLI tests (npm test does).');
}

export interface Result {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  cwd: string;
  /** Written to stdin, which is then closed (closed at once when absent). */
  input?: string;
  /** Added to the child's environment (after the provider keys are taken out of it). */
  env?: Record<string, string>;
}

/** The variables the providers read keys from: never passed on, so no test can reach a real provider with a real key. */
export const PROVIDER_KEY_VARS = ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GOOGLE_GENERATIVE_AI_API_KEY'];

/** This process's environment without provider keys, plus `extra`. */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  for (const name of PROVIDER_KEY_VARS) delete env[name];
  return { ...env, ...extra };
}

/** Starts `cairn <args>`; the caller may kill it. */
export function start(args: string[], options: RunOptions): { child: ChildProcess; done: Promise<Result> } {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: options.cwd,
    env: childEnv(options.env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.stdin!.end(options.input ?? '');
  const done = new Promise<Result>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, done };
}

export const cairn = (args: string[], options: RunOptions): Promise<Result> => start(args, options).done;

/** A shell command line as the CLI prints it, run with `npx cairn` pointing at this checkout. */
export function sh(command: string, cwd: string): Promise<Result> {
  if (!command.startsWith('npx cairn ')) throw new Error(`not a cairn command: ${command}`);
  const line = `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} ${command.slice('npx cairn '.length)}`;
  return shellLine(line, cwd);
}

/** Runs a line through /bin/sh, collecting its output; `env` is added to this process's environment. */
export function shellLine(line: string, cwd: string, env: Record<string, string> = {}): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', line], { cwd, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A fresh working directory, removed after the file's tests. */
export function tempDir(prefix = 'cairn-cli-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

/** Writes files (paths relative to `dir`), making their directories. */
export function write(dir: string, files: Record<string, string | object>): void {
  for (const [relative, content] of Object.entries(files)) {
    const path = join(dir, relative);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  }
}

/**
 * The stored run as rows of the store file (the run's head, transcript and receipts), read without
 * opening a Cairn store: what "the run was left as it was" is checked against once a leg has taken
 * (and given back) the run's lease, which is a write of its own to the leases table.
 */
export function storedRun(storePath: string, runId: string): unknown {
  const db = new Database(storePath, { readonly: true, fileMustExist: true });
  try {
    return {
      run: db.prepare('SELECT * FROM cairn_runs WHERE run_id = ?').all(runId),
      messages: db.prepare('SELECT * FROM cairn_run_messages WHERE run_id = ? ORDER BY idx').all(runId),
      receipts: db.prepare('SELECT * FROM cairn_run_receipts WHERE run_id = ? ORDER BY receipt_key').all(runId),
    };
  } finally {
    db.close();
  }
}

/** Every file under `dir` with its bytes: what "nothing was written" is checked against. */
export function snapshotDir(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (at: string) => {
    if (!existsSync(at)) return;
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else out[path.slice(dir.length)] = readFileSync(path).toString('base64');
    }
  };
  walk(dir);
  return out;
}

/** Resolves once the child's stderr has shown `text` (the condition itself, not a guessed delay). */
export function stderrShows(child: ChildProcess, text: string): Promise<void> {
  return new Promise<void>((resolve) => {
    let seen = '';
    const onData = (d: string) => {
      seen += d;
      if (seen.includes(text)) {
        child.stderr!.off('data', onData);
        resolve();
      }
    };
    child.stderr!.on('data', onData);
  });
}

/** Waits until `ready()` holds: the condition itself, checked every few milliseconds, up to `timeoutMs`. */
export async function waitUntil(ready: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!ready()) {
    if (Date.now() > until) throw new Error(`${what} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * The lease a test gives a process it kills mid-call: short, so the next process takes the run soon after, but
 * not 50 ms (on a loaded machine a renewal that late loses the lease before the call even starts).
 */
export const KILLED_LEASE_TTL_MS = 600;

/** Waits out a killed process's lease, so the next process may take the run. */
export const leaseLapse = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, KILLED_LEASE_TTL_MS + 50));

/** Starts cairn and waits until `path` exists; a process that ends first fails the wait at once, with its output. */
export async function startUntil(args: string[], options: RunOptions, path: string, timeoutMs = 20_000): Promise<ReturnType<typeof start>> {
  const run = start(args, options);
  let exited: Result | null = null;
  void run.done.then((r) => (exited = r), () => undefined);
  await waitUntil(() => existsSync(path) || exited !== null, `${path} did not appear`, timeoutMs);
  if (exited) throw new Error(`the process ended before ${path} appeared: ${JSON.stringify(exited)}`);
  return run;
}

/** Waits until `path` exists. */
export const waitForFile = (path: string, timeoutMs = 20_000): Promise<void> =>
  waitUntil(() => existsSync(path), `${path} did not appear`, timeoutMs);

export const json = <T = any>(result: Result): T => {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(`stdout is not JSON (exit ${result.code}):\n${result.stdout}\nstderr:\n${result.stderr}`);
  }
};

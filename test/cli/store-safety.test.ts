/**
 * The run store in careless hands: `cairn runs` and `cairn inspect` open it
 * read-only (no write, no -wal or -shm created, a store nobody may write
 * works), a file that is not a Cairn store is refused by every command and
 * left as it was, and `cairn backup` copies a store a run is working on into
 * a valid store, never over an existing file.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, cairn, childEnv, json, start, tempDir, waitForFile, write } from './helpers.js';

/** Each file of `dir` with its hash and mtime, and nothing else there: "the directory is as it was". */
function state(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    out[name] = statSync(path).isDirectory() ? 'dir' : `${createHash('sha256').update(readFileSync(path)).digest('hex')} ${statSync(path).mtimeMs}`;
  }
  return out;
}

const restore: (() => void)[] = [];
afterEach(() => {
  for (const undo of restore.splice(0)) undo();
});

/** A demo run waiting for its approval, in a store whose last writer closed: `.cairn/runs.sqlite` alone. */
async function storeWithWaitingRun(): Promise<{ cwd: string; storeDir: string }> {
  const cwd = tempDir();
  const demo = await cairn(['demo', '--run-id', 'd', '--quiet'], { cwd });
  expect(demo.code, demo.stderr).toBe(3);
  const storeDir = join(cwd, '.cairn');
  expect(readdirSync(storeDir)).toEqual(['runs.sqlite']);
  return { cwd, storeDir };
}

describe('read-only commands', () => {
  it('work on a store nobody may write (file 0444, directory 0555) and change nothing: no bytes, no mtime, no -wal or -shm', async () => {
    const { cwd, storeDir } = await storeWithWaitingRun();
    const store = join(storeDir, 'runs.sqlite');
    chmodSync(store, 0o444);
    chmodSync(storeDir, 0o555);
    // Root writes through file modes; where the file system has it, the immutable flag stops root too.
    const immutable = process.getuid?.() === 0 && spawnSync('chattr', ['+i', store, storeDir]).status === 0;
    restore.push(() => {
      if (immutable) spawnSync('chattr', ['-i', storeDir, store]);
      chmodSync(storeDir, 0o755);
      chmodSync(store, 0o644);
    });
    const before = state(storeDir);

    const runs = await cairn(['runs'], { cwd });
    expect(runs.code, runs.stderr).toBe(0);
    expect(runs.stdout).toMatch(/^d +suspended +1 /m);
    expect(json(await cairn(['runs', '--json'], { cwd })).runs.map((r: { runId: string }) => r.runId)).toEqual(['d']);
    const inspected = await cairn(['inspect', 'd'], { cwd });
    expect(inspected.code, inspected.stderr).toBe(3);
    expect(inspected.stdout).toContain('needs approval');
    expect(json(await cairn(['inspect', 'd', '--json'], { cwd }))).toMatchObject({ outcome: 'pending', status: 'suspended' });
    expect(state(storeDir)).toEqual(before);
  });

  // Root ignores file modes; a real user does not. When the tests run as root, run the commands as nobody too.
  const canDropRoot = process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0;
  it.skipIf(!canDropRoot)('work for a user who may not write the store (as nobody), and change nothing', async () => {
    const { cwd, storeDir } = await storeWithWaitingRun();
    chmodSync(cwd, 0o755);
    chmodSync(storeDir, 0o755);
    chmodSync(join(storeDir, 'runs.sqlite'), 0o644);
    const before = state(storeDir);
    const asNobody = (args: string[]) => spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, BIN, ...args], {
      cwd, env: childEnv(), encoding: 'utf8',
    });
    const runs = asNobody(['runs', '--json']);
    expect(runs.status, runs.stderr).toBe(0);
    expect(JSON.parse(runs.stdout).runs.map((r: { runId: string }) => r.runId)).toEqual(['d']);
    const inspected = asNobody(['inspect', 'd', '--json']);
    expect(inspected.status, inspected.stderr).toBe(3);
    expect(JSON.parse(inspected.stdout)).toMatchObject({ outcome: 'pending' });
    expect(state(storeDir)).toEqual(before);
  });

  it('read a store a crash left with its -wal in place, through it, without changing the file or the -wal', async () => {
    const cwd = tempDir();
    write(cwd, {
      'model.json': { turns: [{ toolCalls: [{ toolName: 'hold', args: {} }] }, { text: 'Done.' }] },
      'tools.mjs': `import { writeFileSync } from 'node:fs';
export const tools = { hold: { parameters: { type: 'object' }, execute: async () => {
  writeFileSync(new URL('./started', import.meta.url), '');
  await new Promise(() => setInterval(() => {}, 1000));
} } };
`,
    });
    const run = start(['run', 'Hold.', '--model', 'model.json', '--tools', 'tools.mjs', '--run-id', 'h', '--quiet'], { cwd });
    await waitForFile(join(cwd, 'started'));
    run.child.kill('SIGKILL');
    await run.done;
    const storeDir = join(cwd, '.cairn');
    expect(readdirSync(storeDir).sort()).toEqual(['runs.sqlite', 'runs.sqlite-shm', 'runs.sqlite-wal']);
    const hash = (name: string) => createHash('sha256').update(readFileSync(join(storeDir, name))).digest('hex');
    const before = { main: hash('runs.sqlite'), wal: hash('runs.sqlite-wal') };
    const inspected = await cairn(['inspect', 'h', '--json'], { cwd });
    expect(inspected.code, inspected.stderr).toBe(3);
    expect(json(inspected).pending).toContainEqual(expect.objectContaining({ kind: 'unknown-effect', toolName: 'hold' }));
    expect((await cairn(['runs'], { cwd })).stdout).toMatch(/^h +running/m);
    expect(readdirSync(storeDir).sort()).toEqual(['runs.sqlite', 'runs.sqlite-shm', 'runs.sqlite-wal']);
    expect({ main: hash('runs.sqlite'), wal: hash('runs.sqlite-wal') }).toEqual(before);
  });
});

describe('a file that is not a Cairn store', () => {
  const foreign = (path: string) => {
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    db.exec("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL); INSERT INTO invoices (total) VALUES (12.5)");
    db.close();
  };
  const kinds: Array<[string, (path: string) => void, string]> = [
    ['a text file', (path) => writeFileSync(path, 'name,total\nacme,12.5\n'), 'it is not a SQLite database'],
    ['an empty file', (path) => writeFileSync(path, ''), 'the file is empty'],
    ['a SQLite file with other tables', foreign, "it is a SQLite database without Cairn's tables"],
  ];

  it.each(kinds)('%s: every command says it is not a Cairn store (2), and the file is unchanged', async (name, make, why) => {
    const cwd = tempDir();
    write(cwd, { 'model.json': { turns: [{ text: 'ok' }] } });
    make(join(cwd, 'data.db'));
    const before = state(cwd);
    const commands = [
      ['runs', '--store', 'data.db'],
      ['runs', '--store', 'data.db', '--json'],
      ['inspect', 'r1', '--store', 'data.db'],
      ['resume', 'r1', '--store', 'data.db'],
      ['backup', 'copy.db', '--store', 'data.db'],
      // An empty file is where a new store may go: cairn run takes it.
      ...(name === 'an empty file' ? [] : [['run', 'x', '--model', 'model.json', '--store', 'data.db']]),
    ];
    for (const args of commands) {
      const result = await cairn(args, { cwd });
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toContain(`cairn ${args[0]}: data.db is not a Cairn store: ${why}.`);
      expect(result.stderr).toContain('It was left as it was');
      expect(state(cwd), args.join(' ')).toEqual(before);
    }
  });

  it('cairn run makes a store of an empty file', async () => {
    const cwd = tempDir();
    write(cwd, { 'model.json': { turns: [{ text: 'ok' }] }, 'new.db': '' });
    const result = await cairn(['run', 'x', '--model', 'model.json', '--store', 'new.db', '--run-id', 'r'], { cwd });
    expect(result.code, result.stderr).toBe(0);
    expect((await cairn(['inspect', 'r', '--store', 'new.db'], { cwd })).code).toBe(0);
  });
});

/** Each call of `step` takes a while and logs itself; the first call holds until a `release` file appears. */
const STEP_TOOLS = `import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
const at = (name) => new URL('./' + name, import.meta.url);
export const tools = {
  step: {
    description: 'One step of the job.',
    parameters: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
    execute: async ({ n }) => {
      appendFileSync(at('steps.log'), 'step ' + n + '\\n');
      if (n === 1) {
        writeFileSync(at('started'), '');
        while (!existsSync(at('release'))) await new Promise((r) => setTimeout(r, 10));
      }
      return { done: n };
    },
  },
};
`;

describe('cairn backup', () => {
  it('copies a store while another process runs a leg: the copy is a valid store whose runs load; an existing dest is refused (2)', async () => {
    const cwd = tempDir();
    write(cwd, {
      'model.json': { turns: [...[1, 2].map((n) => ({ toolCalls: [{ toolName: 'step', args: { n } }] })), { text: 'All done.' }] },
      'tools.mjs': STEP_TOOLS,
    });
    // An earlier run, completed: the copy must hold it too.
    write(cwd, { release: '' });
    const earlier = await cairn(['run', 'Do the job.', '--model', 'model.json', '--tools', 'tools.mjs', '--run-id', 'earlier', '--quiet'], { cwd });
    expect(earlier.code, earlier.stderr).toBe(0);
    for (const name of ['release', 'started']) rmSync(join(cwd, name));

    const live = start(['run', 'Do the job.', '--model', 'model.json', '--tools', 'tools.mjs', '--run-id', 'live', '--quiet'], { cwd });
    await waitForFile(join(cwd, 'started'));
    expect(existsSync(join(cwd, '.cairn', 'runs.sqlite-wal'))).toBe(true); // a writer is at work

    const backup = await cairn(['backup', 'copy.sqlite'], { cwd });
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stdout).toContain('Backed up .cairn/runs.sqlite to copy.sqlite: 2 run(s)');
    expect(backup.stdout).toContain('To restore it: stop every cairn process');
    expect(readdirSync(cwd).filter((n) => n.startsWith('copy.sqlite'))).toEqual(['copy.sqlite']);

    const copy = new Database(join(cwd, 'copy.sqlite'), { readonly: true });
    expect(copy.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(copy.pragma('journal_mode', { simple: true })).toBe('wal');
    copy.close();
    const listed = json(await cairn(['runs', '--store', 'copy.sqlite', '--json'], { cwd }));
    expect(listed.runs.map((r: { runId: string }) => r.runId).sort()).toEqual(['earlier', 'live']);
    expect(json(await cairn(['inspect', 'earlier', '--store', 'copy.sqlite', '--json'], { cwd }))).toMatchObject({ outcome: 'completed', output: 'All done.' });
    const inFlight = await cairn(['inspect', 'live', '--store', 'copy.sqlite', '--json'], { cwd });
    expect(inFlight.code, inFlight.stderr).toBe(3);
    expect(json(inFlight)).toMatchObject({ status: 'in-progress' });

    // Never over a file: the copy that is there stays as it was.
    const kept = state(cwd)['copy.sqlite'];
    const again = await cairn(['backup', 'copy.sqlite', '--json'], { cwd });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('copy.sqlite exists already; cairn backup never overwrites a file');
    expect(json(again)).toMatchObject({ error: { code: 'usage' } });
    expect(state(cwd)['copy.sqlite']).toBe(kept);

    write(cwd, { release: '' });
    const done = await live.done;
    expect(done.code, done.stderr).toBe(0);
  });

  it('needs a store and a destination', async () => {
    const cwd = tempDir();
    expect((await cairn(['backup'], { cwd })).stderr).toContain('cairn backup needs the path of the copy');
    const none = await cairn(['backup', 'b.sqlite'], { cwd });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('There is no run store at .cairn/runs.sqlite');
    expect(readdirSync(cwd)).toEqual([]);
  });
});

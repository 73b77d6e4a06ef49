/**
 * Two real processes run 50 turns each on one session at the same time, on
 * the file, SQLite and PostgreSQL services: every one of the 100 turns is
 * stored exactly once, at revisions 1 to 100 with no gap, each process's
 * turns in the order it ran them, and the conversation is the turns'
 * messages in that order. A last-writer-wins service would lose turns here.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createFileSessionService, type Session, type SessionService } from 'cairn/sessions';
import { createPostgresSessionService } from 'cairn/sessions/postgres';
import { createSqliteSessionService } from 'cairn/sessions/sqlite';
import { describePostgres } from '../stores/pg-env.js';

const TURNS = 50;
const root = new URL('../../', import.meta.url).pathname;
const script = join(root, 'test', 'sessions', 'turns-process.ts');
const key = { appName: 'support-copilot', userId: 'user_123', sessionId: 'shared' };
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-two-processes-'));
  dirs.push(dir);
  return dir;
}

interface Report { writer: string; conflicts: number; stale: number }

/** Starts both writers, waits until both have their service open, then lets them go at once. */
async function race(kind: string, where: string, schema = '-'): Promise<Report[]> {
  const children = ['a', 'b'].map((writer) => {
    const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', script, kind, where, schema, writer, String(TURNS)],
      { cwd: root, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const ready = new Promise<void>((resolve, reject) => {
      const check = () => (stdout.includes('ready\n') ? resolve() : undefined);
      child.stdout.on('data', check);
      child.once('exit', (code) => reject(new Error(`writer ${writer} exited with ${code} before it was ready:\n${stderr}`)));
    });
    const done = new Promise<string>((resolve, reject) => child.once('exit', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`writer ${writer} exited with ${code}:\n${stderr}`)))));
    return { child, ready, done };
  });
  await Promise.all(children.map((c) => c.ready));
  for (const { child } of children) child.stdin.end('go\n');
  const outputs = await Promise.all(children.map((c) => c.done));
  const reports = outputs.map((out) => JSON.parse(out.trim().split('\n').at(-1)!) as Report);
  console.log(`${kind}: conflicts answered ${reports.map((r) => `${r.writer}=${r.conflicts}`).join(', ')}; turns appended after a turn they had not seen ${reports.map((r) => `${r.writer}=${r.stale}`).join(', ')}`);
  return reports;
}

async function expectEveryTurnOnce(service: SessionService): Promise<Session> {
  const session = (await service.getSession(key))!;
  const ids = session.turns.map((t) => t.turnId);
  expect(ids).toHaveLength(2 * TURNS);
  expect(new Set(ids).size).toBe(2 * TURNS);
  expect(session.revision).toBe(2 * TURNS);
  expect(session.turns.map((t) => t.revision)).toEqual(Array.from({ length: 2 * TURNS }, (_, i) => i + 1));
  for (const writer of ['a', 'b']) {
    expect(ids.filter((id) => id.startsWith(`${writer}-`))).toEqual(Array.from({ length: TURNS }, (_, i) => `${writer}-${i}`));
  }
  expect(session.messages).toEqual(session.turns.flatMap((t) => t.messages));
  expect(session.messages.filter((m) => m.role === 'user').map((m) => (m.content as string).split(':')[0])).toEqual(ids);
  // They really ran at once: the stored order switches between the writers, not one writer's 50 then the other's.
  const switches = ids.filter((id, i) => i > 0 && id[0] !== ids[i - 1]![0]).length;
  expect(switches).toBeGreaterThan(2);
  return session;
}

describe('two processes x 50 turns on one session', () => {
  it('file service: every turn kept once, in one order', async () => {
    const directory = tempDir();
    await race('file', directory);
    await expectEveryTurnOnce(createFileSessionService({ directory }));
  }, 180_000);

  it('SQLite service: every turn kept once, in one order', async () => {
    const path = join(tempDir(), 'ops.sqlite');
    const service = createSqliteSessionService({ path });
    await race('sqlite', path);
    await expectEveryTurnOnce(service);
    service.close();
  }, 180_000);
});

describePostgres('two processes x 50 turns on one PostgreSQL session', (env) => {
  it('PostgreSQL service: every turn kept once, in one order', async () => {
    const schema = env.newSchema();
    const service = createPostgresSessionService({ connectionString: env.url }, { schema });
    await service.setup();
    try {
      await race('postgres', env.url, schema);
      await expectEveryTurnOnce(service);
    } finally {
      await service.close();
    }
  }, 180_000);
});

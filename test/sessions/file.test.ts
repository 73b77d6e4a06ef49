/**
 * The file session service beyond the conformance suite: nothing outside its
 * directory is ever read or written, a foreign, corrupted or newer file is a
 * typed error and stays as it was, a writer killed in the middle of its
 * writes leaves a whole session (and its lock is taken over), and a lock held
 * by a live writer makes a write wait, then answer a conflict.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  appendSessionTurn, createFileSessionService, SessionConflictError, SessionCorruptError, SessionForeignError, SessionIdError,
} from 'cairn/sessions';

const root = new URL('../../', import.meta.url).pathname;
const ADA = { appName: 'support-copilot', userId: 'user_ada', sessionId: 'demo' };
const turn = (turnId: string) => ({ turnId, messages: [{ role: 'user' as const, content: `hello from ${turnId}` }] });
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
/** A parent folder holding the sessions directory and, beside it, a file a bad id could aim at. */
function setup() {
  const parent = mkdtempSync(join(tmpdir(), 'cairn-file-sessions-'));
  dirs.push(parent);
  const directory = join(parent, 'sessions');
  writeFileSync(join(parent, 'escape.json'), 'outside');
  return { parent, directory, service: createFileSessionService({ directory }) };
}

describe('the directory is the boundary', () => {
  it('refuses ids that name a path elsewhere before touching the disk: no directory, no file, nothing outside changed', async () => {
    const { parent, directory, service } = setup();
    for (const sessionId of ['../escape', '..', 'sub/../../escape', '/tmp/x', '..\\escape', 'a\0b', '.lock']) {
      await expect(service.appendTurn({ ...ADA, sessionId }, turn('t1'), { expectedRevision: 0 })).rejects.toBeInstanceOf(SessionIdError);
      await expect(service.getSession({ ...ADA, sessionId })).rejects.toBeInstanceOf(SessionIdError);
    }
    expect(readdirSync(parent).sort()).toEqual(['escape.json']);
    expect(readFileSync(join(parent, 'escape.json'), 'utf8')).toBe('outside');
    expect(() => createFileSessionService({ directory: '' })).toThrow(SessionIdError);
    void directory;
  });

  it('does not follow a symbolic link planted in the directory, and writes nothing through it', async () => {
    const { parent, directory, service } = setup();
    await service.appendTurn(ADA, turn('t1'), { expectedRevision: 0 });
    const outside = join(parent, 'stolen.json');
    writeFileSync(outside, readFileSync(join(directory, 'demo.json')));
    symlinkSync(outside, join(directory, 'linked.json'));
    const linked = { ...ADA, sessionId: 'linked' };
    await expect(service.getSession(linked)).rejects.toBeInstanceOf(SessionCorruptError);
    await expect(service.appendTurn(linked, turn('t2'), { expectedRevision: 1 })).rejects.toBeInstanceOf(SessionCorruptError);
    expect(readFileSync(outside, 'utf8')).toBe(readFileSync(join(directory, 'demo.json'), 'utf8'));
  });
});

describe('files it cannot take as they are', () => {
  it('a foreign file (another user, another app, another session id) is refused and left as it is', async () => {
    const { directory, service } = setup();
    await service.appendTurn(ADA, turn('t1'), { expectedRevision: 0 });
    const bytes = readFileSync(join(directory, 'demo.json'));
    await expect(service.appendTurn({ ...ADA, userId: 'user_bob' }, turn('t2'), { expectedRevision: 1 }))
      .rejects.toMatchObject({ name: 'SessionForeignError', code: 'session_foreign', mismatch: 'userId' });
    writeFileSync(join(directory, 'copied.json'), bytes);
    const copied = { ...ADA, sessionId: 'copied' };
    const error = await service.getSession(copied).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SessionForeignError);
    expect(error).toMatchObject({ mismatch: 'sessionId' });
    await expect(service.appendTurn(copied, turn('t2'), { expectedRevision: 1 })).rejects.toBeInstanceOf(SessionForeignError);
    expect(readFileSync(join(directory, 'copied.json'))).toEqual(bytes);
    expect(readFileSync(join(directory, 'demo.json'))).toEqual(bytes);
  });

  it('a truncated file, one that is not a session, or of a newer format is SessionCorruptError, and is never reset', async () => {
    const { directory, service } = setup();
    mkdirSync(directory);
    const contents = ['', '{"kind":"cairn-session","vers', '[]', '{"kind":"other"}', JSON.stringify({ kind: 'cairn-session', version: 2, ...ADA })];
    for (const text of contents) {
      writeFileSync(join(directory, 'demo.json'), text);
      await expect(service.getSession(ADA)).rejects.toMatchObject({ name: 'SessionCorruptError', code: 'session_corrupt', sessionId: 'demo' });
      await expect(service.appendTurn(ADA, turn('t1'), { expectedRevision: 0 })).rejects.toBeInstanceOf(SessionCorruptError);
      await expect(appendSessionTurn(service, ADA, turn('t1'))).rejects.toBeInstanceOf(SessionCorruptError);
      await expect(service.listSessions(ADA)).rejects.toBeInstanceOf(SessionCorruptError);
      expect(readFileSync(join(directory, 'demo.json'), 'utf8')).toBe(text);
    }
    await expect(service.getSession(ADA)).rejects.toThrow(/format version 2 is not one this reader knows/);
  });

  it('leaves only session files behind: no temp file, no lock', async () => {
    const { directory, service } = setup();
    for (let i = 0; i < 5; i++) await appendSessionTurn(service, ADA, turn(`t${i}`));
    await service.appendTurn({ ...ADA, sessionId: 'other' }, turn('t1'), { expectedRevision: 0 });
    expect(readdirSync(directory).sort()).toEqual(['demo.json', 'other.json']);
    expect(JSON.parse(readFileSync(join(directory, 'demo.json'), 'utf8'))).toMatchObject({ kind: 'cairn-session', version: 1, revision: 5 });
  });
});

describe('writers that die or hold on', () => {
  it('a writer SIGKILLed in the middle of its writes leaves a whole session, and the next writer takes its lock over', async () => {
    const { directory, service } = setup();
    mkdirSync(directory, { recursive: true });
    const key = { appName: 'support-copilot', userId: 'user_123', sessionId: 'crashy' };
    for (let round = 0; round < 3; round++) {
      const child = spawn(process.execPath, ['--conditions=source', '--import', 'tsx', join(root, 'test/sessions/crash-writer.ts'), directory, `k${round}`],
        { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
      await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
      const before = (await service.getSession(key))?.revision ?? 0;
      // Kill it once it wrote a few turns of its own, wherever it is in its next write.
      while (((await service.getSession(key))?.revision ?? 0) < before + 3) await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, Math.random() * 20));
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
      const session = (await service.getSession(key))!;
      expect(session.turns.map((t) => t.revision)).toEqual(Array.from({ length: session.revision }, (_, i) => i + 1));
      for (const t of session.turns.filter((t) => t.turnId.startsWith('k'))) expect((t.messages[0]!.content as string).startsWith(`${t.turnId} `)).toBe(true);
      // Whatever lock it left is a dead process's: the next write goes through.
      const after = await appendSessionTurn(service, key, turn(`after-${round}`));
      expect(after.revision).toBe(session.revision + 1);
    }
    // The dead writers' locks and half-written temp files went with the writes that took their locks over.
    expect(readdirSync(directory)).toEqual(['crashy.json']);
  }, 60_000);

  it('an empty lock file (a writer killed between creating and filling it) is broken after a short grace, not lockStaleMs', async () => {
    const { directory } = setup();
    const service = createFileSessionService({ directory });
    await service.appendTurn(ADA, turn('t1'), { expectedRevision: 0 });
    writeFileSync(join(directory, '.demo.lock'), '');
    expect((await service.appendTurn(ADA, turn('t2'), { expectedRevision: 1 })).status).toBe('appended');
    expect(readdirSync(directory)).toEqual(['demo.json']);
  }, 20_000);

  it('a lock a live writer holds makes a write wait, then answer a conflict; a lock older than lockStaleMs is removed', async () => {
    const { parent, directory } = setup();
    const service = createFileSessionService({ directory, lockWaitMs: 50 });
    await service.appendTurn(ADA, turn('t1'), { expectedRevision: 0 });
    // The parent of this process is alive: its lock is a live writer's.
    const lock = join(directory, '.demo.lock');
    writeFileSync(lock, JSON.stringify({ token: 'x', pid: process.ppid, host: (await import('node:os')).hostname(), at: Date.now(), temp: '.demo.000000000000.tmp' }));
    expect(await service.appendTurn(ADA, turn('t2'), { expectedRevision: 1 })).toEqual({ status: 'conflict', revision: 1 });
    expect(await service.appendTurn(ADA, turn('t2'), { expectedRevision: 'latest' })).toEqual({ status: 'conflict', revision: 1 });
    await expect(appendSessionTurn(service, ADA, turn('t2'))).rejects.toBeInstanceOf(SessionConflictError);
    expect((await service.getSession(ADA))!.revision).toBe(1);
    writeFileSync(join(directory, '.demo.000000000000.tmp'), '{"half a sess');
    const patient = createFileSessionService({ directory, lockWaitMs: 2000, lockStaleMs: 200 });
    expect((await patient.appendTurn(ADA, turn('t2'), { expectedRevision: 1 })).status).toBe('appended');
    expect(readdirSync(directory), 'the stale lock and the temp file it named are gone').toEqual(['demo.json']);
    // A lock file naming a path elsewhere as its temp file: broken as stale, and nothing outside is removed.
    writeFileSync(lock, JSON.stringify({ token: 'y', pid: process.ppid, host: 'elsewhere', at: 0, temp: '../escape.json' }));
    expect((await patient.appendTurn(ADA, turn('t3'), { expectedRevision: 2 })).status).toBe('appended');
    expect(readFileSync(join(parent, 'escape.json'), 'utf8')).toBe('outside');
  });
});

/**
 * examples/support-bot.ts runs without a key, as a user runs it (tsx against
 * the package's sources): two turns of one SQLite session, the second
 * answered from the first, the runs checkpointed in the same file. Run twice
 * on one file, the session goes on where it was.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'cairn-support-bot-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function tsx(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const manifest = JSON.parse(readFileSync(join(root, 'node_modules', 'tsx', 'package.json'), 'utf8')) as { bin: string | Record<string, string> };
  const bin = join(root, 'node_modules', 'tsx', typeof manifest.bin === 'string' ? manifest.bin : manifest.bin['tsx']!);
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, '--conditions=source', ...args], { cwd: root, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

describe('examples/support-bot.ts', () => {
  it('answers two turns of one SQLite session, the second from the first, and keeps both across processes', async () => {
    const file = join(dir, 'support.sqlite');
    const first = await tsx('examples/support-bot.ts', file);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout.split('\n')).toEqual([
      'bot: It has shipped and should arrive on Friday.',
      'bot: Earlier you asked: "Where is my order A-42?"',
      'session ticket-1: revision 2, 2 turns, 6 messages',
      'runs stored: completed, completed',
      '',
    ]);
    // A second process on the same file: the session holds the first process's turns and goes on after them.
    const again = await tsx('examples/support-bot.ts', file);
    expect(again.code).toBe(0);
    expect(again.stdout.split('\n')).toEqual([
      'bot: It has shipped and should arrive on Friday.',
      // The question right before this one is this process's first; the session holds all four turns.
      'bot: Earlier you asked: "Where is my order A-42?"',
      'session ticket-1: revision 4, 4 turns, 12 messages',
      'runs stored: completed, completed, completed, completed',
      '',
    ]);
  }, 120_000);
});

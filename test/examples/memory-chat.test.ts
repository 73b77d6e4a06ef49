/**
 * examples/memory-chat.ts runs without a key, as a user runs it
 * (`npx tsx examples/memory-chat.ts` against the package's sources), and
 * prints what its comments say: the fail-over, the memory it kept, the chat
 * write that failed and reconcileAgentRun repairing it, and the recall in the
 * next run of the same chat.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** `npx tsx --conditions=source <file>` without npm's own start-up: node runs the tsx binary npx would resolve. */
function tsx(file: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const manifest = JSON.parse(readFileSync(join(root, 'node_modules', 'tsx', 'package.json'), 'utf8')) as { bin: string | Record<string, string> };
  const bin = join(root, 'node_modules', 'tsx', typeof manifest.bin === 'string' ? manifest.bin : manifest.bin['tsx']!);
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, '--conditions=source', file], { cwd: root, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

describe('examples/memory-chat.ts', () => {
  it('fails over, remembers, repairs the failed chat write with reconcileAgentRun, and recalls in the next run', async () => {
    const { code, stdout, stderr } = await tsx('examples/memory-chat.ts');
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout.split('\n')).toEqual([
      'run: completed: Noted: you prefer tea.',
      '  warning (fallbackModels): mock:primary failed (overloaded); the call fails over to mock:fallback.',
      '  warning (chat): Chat chat-ada was not written: the chat store failed (chat database unavailable); the run\'s checkpoint is intact and a terminal resume or reconcileAgentRun repairs it.',
      'fail-over: primary -> fallback (model_call_failed); the run now calls fallback',
      'memory extraction: completed (1 mutation)',
      'remembered: prefers tea',
      'chat projection: failed; chat stored: no',
      "reconcile: { runId: 'tea-1', memory: 'completed', chat: 'written' }",
      'chat messages: tea-1:0, tea-1:1',
      'second run: completed: Tea, as usual.',
      'it recalled: prefers tea',
      'chat messages: tea-1:0, tea-1:1, tea-2:2, tea-2:3, tea-2:4',
      '',
    ]);
  }, 90_000);
});

/**
 * examples/triage-billing.ts runs without a key, as a user runs it
 * (`npx tsx examples/triage-billing.ts` against the package's sources): triage
 * hands off to billing in one process, billing's MCP refund is approved in a
 * second one that is SIGKILLed while the payment server has the call, and a
 * third process resumes with billing; the payment server (a real MCP server
 * over stdio, written with the SDK's server classes) counts one refund.
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
    execFile(process.execPath, [bin, '--conditions=source', file], { cwd: root, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

describe('examples/triage-billing.ts', () => {
  it('hands off, suspends for approval, is killed mid-call, and resumes in another process with the refund made once', async () => {
    const { code, stdout, stderr } = await tsx('examples/triage-billing.ts');
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout.split('\n')).toEqual([
      'process 1: suspended; billing asks to run payments__issue_refund {"order":"o-1"}',
      'process 2: approved, then killed (SIGKILL) while the payment server had the refund',
      'process 3: completed: Order o-1 is refunded.',
      'active agent: billing',
      'receipt: transfer_to_billing completed (idempotent)',
      'receipt: payments__issue_refund completed (idempotent): Order o-1 was already refunded.',
      'refunds the payment server made: 1',
      '',
    ]);
  }, 150_000);
});

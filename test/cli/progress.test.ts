/** The progress writer on its own: plain lines in a pipe, a spinner redrawn in place on a terminal. */
import { describe, expect, it } from 'vitest';
import { createProgress } from '../../src/cli/progress.js';

const events = [
  { type: 'run-start', runId: 'r1', resumed: false },
  { type: 'step-start', step: 0, phase: 'loop' },
  { type: 'tool-call-start', step: 0, toolCallId: 'c1', toolName: 'deploy', args: { env: 'prod' } },
  {
    type: 'approval-request',
    approval: { approvalId: 'a1', token: 't', toolCallId: 'c1', toolName: 'deploy', args: { env: 'prod' }, modelStep: 0 },
  },
] as const;

function sink(isTTY: boolean) {
  const chunks: string[] = [];
  return { stream: { isTTY, write: (text: string) => chunks.push(text) }, chunks };
}

describe('progress on stderr', () => {
  it('writes one plain line per event when stderr is not a terminal', () => {
    const { stream, chunks } = sink(false);
    const progress = createProgress(stream);
    for (const event of events) progress.onEvent(event as never);
    progress.stop();
    expect(chunks.join('')).toBe([
      'cairn: starting run r1',
      'cairn: step 1',
      'cairn: calling deploy {"env":"prod"}',
      'cairn: approval needed: deploy {"env":"prod"} (approval a1)',
      '',
    ].join('\n'));
  });

  it('draws a spinner with the current status on a terminal, keeps finished lines, and clears it on stop', () => {
    const { stream, chunks } = sink(true);
    const progress = createProgress(stream);
    for (const event of events) progress.onEvent(event as never);
    const out = chunks.join('');
    expect(out).toContain('  calling deploy {"env":"prod"}\n');
    expect(out).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] running deploy/);
    progress.stop();
    expect(chunks.at(-1)).toBe('\r\x1b[2K');
  });
});

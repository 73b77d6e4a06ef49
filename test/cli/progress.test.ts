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

  it("streams the model's text on a terminal, indented, with the spinner resting and control characters dropped", () => {
    const { stream, chunks } = sink(true);
    const progress = createProgress(stream);
    progress.onEvent({ type: 'step-start', step: 0, phase: 'loop' } as never);
    const mark = chunks.length;
    for (const delta of ['Deploying ', 'web\nto prod', '\x1b[31m now.']) progress.onEvent({ type: 'text-delta', step: 0, delta } as never);
    const text = chunks.slice(mark).join('');
    expect(text).toBe('\r\x1b[2K  Deploying web\n  to prod[31m now.');
    progress.onEvent({ type: 'tool-call-start', step: 0, toolCallId: 'c1', toolName: 'deploy', args: {} } as never);
    const after = chunks.slice(mark).join('');
    // The text line is ended before the next log line, and the spinner comes back.
    expect(after).toContain('now.\n  calling deploy {}\n');
    expect(after).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] running deploy$/);
    progress.stop();
  });

  it('leaves the text out of a pipe: the report carries it', () => {
    const { stream, chunks } = sink(false);
    const progress = createProgress(stream);
    progress.onEvent({ type: 'text-delta', step: 0, delta: 'Hello' } as never);
    progress.stop();
    expect(chunks).toEqual([]);
  });
});

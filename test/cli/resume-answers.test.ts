/**
 * The verdicts `cairn resume` sends with a retry, against a stored run's
 * pending list (operator.test.ts drives the approved case end to end; a run
 * that kept no verdict for an approved call comes only from older records,
 * so that case is checked here on the function).
 */
import { describe, expect, it } from 'vitest';
import type { HeadlessReport, PendingAction } from '../../src/headless/index.js';
import { parse } from '../../src/cli/args.js';
import { ANSWER_OPTIONS, approvalResponses, readAnswers } from '../../src/cli/resume-answers.js';

const OPTIONS = ANSWER_OPTIONS;

const unknown = (approval?: { approved?: boolean }): PendingAction => ({
  kind: 'unknown-effect', resumeWith: ['retryToolCallIds', 'reconciledToolResults'], toolCallId: 'c1', toolName: 'charge', modelStep: 0,
  ...(approval ? { approval: { approvalId: 'a1', token: 't1', ...approval } } : {}),
});

const stored = (...pending: PendingAction[]) => ({ pending }) as unknown as HeadlessReport<unknown>;
const command = (args: string[]) => `npx cairn resume r ${args.join(' ')}`;
const answersOf = (...argv: string[]) => readAnswers(parse(argv, OPTIONS));

describe('verdicts with --retry', () => {
  it('sends the recorded verdict, with its token, for a call that ran under an approval', () => {
    expect(approvalResponses(answersOf('--retry', 'c1'), stored(unknown({ approved: true })), command))
      .toEqual([{ approvalId: 'a1', token: 't1', approved: true }]);
    // Given again, it goes once.
    expect(approvalResponses(answersOf('--retry', 'c1', '--approve', 'a1'), stored(unknown({ approved: true })), command))
      .toEqual([{ approvalId: 'a1', token: 't1', approved: true }]);
  });

  it('refuses a retry that would be answered as denied because no verdict was kept, and says what to pass', () => {
    expect(() => approvalResponses(answersOf('--retry', 'c1'), stored(unknown({})), command)).toThrow(
      /--retry c1: charge was held for approval a1, and the run kept no verdict for it, so a retry alone would be answered as denied\. Pass the verdict with the retry: npx cairn resume r --retry c1 --approve a1/,
    );
    expect(approvalResponses(answersOf('--retry', 'c1', '--approve', 'a1'), stored(unknown({})), command))
      .toEqual([{ approvalId: 'a1', token: 't1', approved: true }]);
  });

  it('refuses the opposite of the recorded verdict; a call never held for approval gets none', () => {
    expect(() => approvalResponses(answersOf('--retry', 'c1', '--deny', 'a1'), stored(unknown({ approved: true })), command))
      .toThrow(/--deny a1: that approval was approved already/);
    expect(approvalResponses(answersOf('--retry', 'c1'), stored(unknown()), command)).toEqual([]);
  });
});

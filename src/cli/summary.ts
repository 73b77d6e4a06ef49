/**
 * The human summary of a report on stdout: how the run ended, its answer, and
 * for each thing it waits for, the exact `cairn resume` command that answers it.
 */
import { exitCodeFor, type HeadlessReport, type PendingAction } from '../headless/index.js';

/** How the printed commands start. */
export const PROGRAM = 'npx cairn';

const SAFE = /^[A-Za-z0-9_\/.,:=@%+-]+$/;

/** Quotes a word for a POSIX shell when it needs it. */
export function shellQuote(word: string): string {
  if (word !== '' && SAFE.test(word)) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** `--name value`, or `--name=value` when the value starts with a dash (it would read as a flag). */
export function flagArgs(name: string, value: string): string[] {
  return value.startsWith('-') ? [`--${name}=${value}`] : [`--${name}`, value];
}

export interface CommandContext {
  /** Flags every printed command repeats (`--store <path>` when it is not the default). */
  storeArgs: string[];
}

export function resumeCommand(ctx: CommandContext, runId: string, args: string[] = []): string {
  return [PROGRAM, ...['resume', runId, ...args, ...ctx.storeArgs].map(shellQuote)].join(' ');
}

const HEADLINES: Record<HeadlessReport['outcome'], string> = {
  completed: 'completed',
  pending: 'waiting',
  failed: 'failed',
  stopped: 'stopped without an answer',
  cancelled: 'cancelled',
  limit: 'stopped at a limit',
  busy: 'busy (another executor holds it)',
};

function brief(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

type UnknownApproval = NonNullable<Extract<PendingAction, { kind: 'unknown-effect' }>['approval']>;

/** What an unknown call's approval says about a retry. */
function approvalNote(approval: UnknownApproval): string {
  if (approval.approved === true) return `(it ran under approval ${approval.approvalId}, approved: a retry runs it under that verdict, with no new one)`;
  if (approval.approved === false) return `(approval ${approval.approvalId} was denied)`;
  return `(it was held for approval ${approval.approvalId} and no verdict was kept: a retry needs --approve again)`;
}

/** The lines that say what one pending action waits for and how to answer it. */
function pendingLines(ctx: CommandContext, runId: string, action: PendingAction): string[] {
  switch (action.kind) {
    case 'approval':
      return [
        `  ${action.toolName} ${brief(action.args)} needs approval (approval ${action.approvalId})`,
        `    approve: ${resumeCommand(ctx, runId, flagArgs('approve', action.approvalId))}`,
        `    deny:    ${resumeCommand(ctx, runId, [...flagArgs('deny', action.approvalId), '--reason', 'why not'])}`,
      ];
    case 'client-call':
      return [
        `  ${action.toolName} ${brief(action.args)} waits for a client result (call ${action.toolCallId})`,
        `    answer:  ${resumeCommand(ctx, runId, ['--client-result', `${action.toolCallId}=<json>`])}`,
      ];
    case 'unknown-effect': {
      const approval = action.approval;
      // A call held for approval whose verdict was not kept needs one again with the retry.
      const needsVerdict = approval !== undefined && approval.approved === undefined;
      const retry = [...flagArgs('retry', action.toolCallId), ...(needsVerdict ? flagArgs('approve', approval.approvalId) : [])];
      return [
        `  ${action.toolName} (call ${action.toolCallId}) started and its outcome was never recorded; check what it did, then`,
        ...(approval ? [`    ${approvalNote(approval)}`] : []),
        `    run it again:    ${resumeCommand(ctx, runId, retry)}`,
        `    or record it:    ${resumeCommand(ctx, runId, ['--reconcile', `${action.toolCallId}=<json>`])}`,
      ];
    }
    case 'resume':
      return [`  a plain resume (${action.phase})`, `    go on:   ${resumeCommand(ctx, runId)}`];
  }
}

/** What a report waits for, each with the command that answers it. */
function waitingLines(report: HeadlessReport<unknown>, ctx: CommandContext): string[] {
  if (report.pending.length === 0) return [];
  const lines = ['Waiting for:'];
  for (const action of report.pending) lines.push(...pendingLines(ctx, report.runId, action));
  if (report.pending.filter((a) => a.kind === 'unknown-effect').length > 1) {
    lines.push('  (answer every call above in one resume: repeat --retry / --reconcile)');
  }
  return lines;
}

const warningLines = (report: HeadlessReport<unknown>) => report.warnings.map((w) => `warning [${w.code}]: ${w.message}`);

function costLine(report: HeadlessReport<unknown>): string {
  const cost = report.cost.complete ? `$${report.cost.usd.toFixed(4)}` : `at least $${report.cost.usd.toFixed(4)}`;
  return `${report.steps} step(s), ${report.usage.totalTokens} tokens, ${cost}.`;
}

/** The summary printed when --json is not given. */
export function formatReport(report: HeadlessReport<unknown>, ctx: CommandContext): string {
  const lines: string[] = [];
  const headline = HEADLINES[report.outcome];
  const why = [...(headline === report.outcome ? [] : [report.outcome]), ...(report.reason ? [report.reason] : []), `exit ${exitCodeFor(report)}`];
  lines.push(`Run ${report.runId} ${headline === 'waiting' ? 'is waiting' : headline} (${why.join(', ')}).`);
  if (report.outcome === 'completed' && report.output !== undefined) {
    lines.push('', brief(report.output), '');
  }
  if (report.error) lines.push(`Error ${report.error.code ?? report.error.name}: ${report.error.message}`);
  if (report.parentRunId) lines.push(`A sub-agent run, started by run ${report.parentRunId}.`);
  for (const c of report.childRuns ?? []) lines.push(`Sub-agent run ${c.runId} (${c.toolName}, call ${c.toolCallId} of step ${c.modelStep}).`);
  if (report.retry) {
    lines.push('The cause was transient; go on from the last checkpoint with:');
    lines.push(`  ${resumeCommand(ctx, report.runId, ['--retry-failed'])}`);
  }
  lines.push(...waitingLines(report, ctx), ...warningLines(report), costLine(report));
  return `${lines.join('\n')}\n`;
}

/**
 * A resume refused before it wrote anything (a changed binding, answers that
 * match nothing) of a run that still waits: not "failed", since the run is as
 * it was. `stored` is the stored run, read after the refusal.
 */
export function formatRefusal(leg: HeadlessReport<unknown>, stored: HeadlessReport<unknown>, ctx: CommandContext): string {
  const code = leg.error?.code ?? leg.error?.name ?? 'refused';
  return [
    `The resume of run ${leg.runId} was refused (${code}, exit ${exitCodeFor(leg)}): nothing was written, and the run is unchanged and still waiting.`,
    ...(leg.error ? [`Error ${code}: ${leg.error.message}`] : []),
    ...warningLines(leg),
    ...waitingLines(stored, ctx),
    '',
  ].join('\n');
}

/** Who holds a busy run and when its lease lapses, read from the lease provider after the refusal. */
export function formatBusy(lease: { owner: string; expiresAt: number } | null, now: number): string {
  if (lease === null) return 'The other process has let go of the run since: run the command again.\n';
  const seconds = Math.max(0, Math.ceil((lease.expiresAt - now) / 1000));
  return [
    `Another process holds the run (${lease.owner}). Its lease lapses at ${new Date(lease.expiresAt).toISOString()} (in ${seconds} s) unless that process renews it, which it does while it works.`,
    'If that process is gone (killed, crashed), run the same command again after then.',
    '',
  ].join('\n');
}

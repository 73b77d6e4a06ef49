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
    case 'unknown-effect':
      return [
        `  ${action.toolName} (call ${action.toolCallId}) started and its outcome was never recorded; check what it did, then`,
        `    run it again:    ${resumeCommand(ctx, runId, flagArgs('retry', action.toolCallId))}`,
        `    or record it:    ${resumeCommand(ctx, runId, ['--reconcile', `${action.toolCallId}=<json>`])}`,
      ];
    case 'resume':
      return [`  a plain resume (${action.phase})`, `    go on:   ${resumeCommand(ctx, runId)}`];
  }
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
  if (report.retry) {
    lines.push('The cause was transient; go on from the last checkpoint with:');
    lines.push(`  ${resumeCommand(ctx, report.runId, ['--retry-failed'])}`);
  }
  if (report.pending.length > 0) {
    lines.push('Waiting for:');
    for (const action of report.pending) lines.push(...pendingLines(ctx, report.runId, action));
    if (report.pending.filter((a) => a.kind === 'unknown-effect').length > 1) {
      lines.push('  (answer every call above in one resume: repeat --retry / --reconcile)');
    }
  }
  for (const warning of report.warnings) lines.push(`warning [${warning.code}]: ${warning.message}`);
  const cost = report.cost.complete ? `$${report.cost.usd.toFixed(4)}` : `at least $${report.cost.usd.toFixed(4)}`;
  lines.push(`${report.steps} step(s), ${report.usage.totalTokens} tokens, ${cost}.`);
  return `${lines.join('\n')}\n`;
}

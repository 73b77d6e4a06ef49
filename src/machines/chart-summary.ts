/**
 * The stored-run page's summary: what the record says about the run as a whole. Each field is
 * read from the same description the rest of the page draws (the states marked on the run chart,
 * the steps of the timeline, what the details say it waits for), so the summary cannot tell a
 * different story from the page below it; the outcome also reads the record's result.
 */
import type { AgentRunEnvelope } from '../agent/types.js';
import { escapeHtml as esc } from './chart-boxes.js';
import type { RunDescription } from './describe.js';

export const item = (label: string, value: string): string => `<dt>${esc(label)}</dt><dd>${value}</dd>`;
export const list = (values: readonly string[]): string =>
  (values.length === 0 ? '<span class="empty">none</span>' : values.map((v) => `<code>${esc(v)}</code>`).join(', '));
const time = (ms: number): string => (Number.isFinite(ms) ? esc(new Date(ms).toISOString()) : '?');
const plural = (n: number, one: string): string => `${n} ${one}${n === 1 ? '' : 's'}`;

/**
 * How the run ended, or that it has not: from its status and its stored result. A completed run
 * says so with its step count (its output is not shown, as nothing the run produced is); a
 * stopped one its reason; a failed one its error code and whether a retry can go on.
 */
export function outcomeText(run: RunDescription, envelope: AgentRunEnvelope): { text: string; ended: boolean } {
  const result = envelope.result;
  const steps = plural(run.steps.length, 'model step');
  switch (run.status) {
    case 'completed':
      return { text: `completed after ${steps}, with its output (not shown)`, ended: true };
    case 'stopped': {
      const reason = result?.status === 'stopped' ? result.reason : run.outcome.stopReason;
      const unknown = run.unknownEffects.length > 0 ? `; ${plural(run.unknownEffects.length, 'call')} with an unknown effect` : '';
      return { text: `stopped: ${reason ?? 'no reason recorded'} after ${steps}${unknown}`, ended: true };
    }
    case 'failed': {
      const code = run.outcome.errorCode ?? 'no error code recorded';
      const retry = run.outcome.retryable ? '; retryable from its last checkpoint (resume with retryFailed)' : '';
      return { text: `failed: error ${code} after ${steps}${retry}`, ended: true };
    }
    case 'suspended':
      return { text: 'none yet: suspended until it gets what it waits for', ended: false };
    case 'drained':
      return { text: 'none yet: drained, a resume goes on from its last checkpoint', ended: false };
    default:
      return { text: 'none yet: the run is under way', ended: false };
  }
}

/**
 * What the states marked on the chart are, where the status alone would read otherwise: for a
 * failed run whose record keeps the checkpoint before the failure, that checkpoint's; for a run
 * that suspended or drained, the state whose save wrote the record (`suspending`, `draining`).
 */
export function statesNote(run: RunDescription): string {
  if (run.status === 'failed' && run.outcome.retryable) return ' (its last checkpoint, which a retry goes on from)';
  if ((run.status === 'suspended' || run.status === 'drained') && !run.states.includes(run.status)) {
    return ' (the state whose save wrote this record; a resume goes on from it)';
  }
  return '';
}

export function summaryHtml(run: RunDescription, envelope: AgentRunEnvelope): string {
  const machine = `<code>${esc(run.machine.id)}</code> v${run.machine.version}${
    run.machine.storedVersion === run.machine.version ? '' : ` (stored by v${run.machine.storedVersion}, migrated in memory)`}`;
  const receipts = Object.entries(run.receipts.byStatus).map(([status, n]) => `${n} ${status}`);
  const outcome = outcomeText(run, envelope);
  const rows = [
    item('Run', `<code>${esc(run.runId)}</code>`),
    item('Machine', machine),
    item('Status', `<strong data-field="status">${esc(run.status)}</strong>`),
    item('States', `<span class="states-list" data-field="run-states">${list(run.states)}</span>${esc(statesNote(run))}`),
    item('Steps', `<span data-field="steps">${run.steps.length}</span>`),
    item('Revision', String(run.revision)),
    item('Created', time(run.createdAt)),
    item('Updated', time(run.updatedAt)),
    item('Usage', esc(`${run.usage.inputTokens} in, ${run.usage.outputTokens} out, ${run.usage.totalTokens} total tokens`)),
    item('Outcome', `<span data-field="outcome"${outcome.ended ? '' : ' class="empty"'}>${esc(outcome.text)}</span>`),
    item('Receipts', receipts.length > 0 ? esc(receipts.join(', ')) : '<span class="empty">none</span>'),
    item('Waiting for', waitingHtml(run)),
  ];
  if (run.ledger !== null) rows.push(item('Budget', `<code>${esc(JSON.stringify(run.ledger))}</code>`));
  return `<dl class="summary">${rows.join('')}</dl>`;
}

export function waitingHtml(run: RunDescription): string {
  const waits = [
    ...run.pendingApprovals.map((a) => `approval ${a.approvalId} of ${a.toolName} (${a.toolCallId}, step ${a.modelStep})`),
    ...run.pendingClientCalls.map((c) => `client result of ${c.toolName} (${c.toolCallId}, step ${c.modelStep})`),
    ...run.unknownEffects.map((u) => `a decision on ${u.toolName} (${u.toolCallId}, step ${u.modelStep}), whose effect is unknown`),
  ];
  return waits.length === 0 ? '<span class="empty">nothing</span>' : waits.map(esc).join('<br>');
}

/**
 * The decisions of evidence reconciliation, kept in the ops store's journal:
 * one stream per run (`cairn/tool-evidence/<scope>/<runId>`, created under
 * the run's scope), one frame per decision. An append names the seq it read,
 * so two deciders can never both add to a stream they read at the same seq.
 * Frames hold digests, never an output or a proof.
 */
import { digestOf } from '../agent/digest.js';
import type { AgentStreamJournal, JournalFrame } from '../ui/journal.js';
import type { ToolEvidenceDecision, ToolExecutionEvidence } from './types.js';

export function evidenceStreamId(run: { scope: string; runId: string }): string {
  return `cairn/tool-evidence/${encodeURIComponent(run.scope)}/${encodeURIComponent(run.runId)}`;
}

/** What makes two pieces of evidence the same: every field, `isError` defaulted. */
export function evidenceDigestOf(evidence: ToolExecutionEvidence): string {
  const { operationId, runId, scope, toolCallId, toolName, inputDigest, output, source, proof } = evidence;
  return digestOf({ operationId, runId, scope, toolCallId, toolName, inputDigest, output, isError: evidence.isError === true, source, proof });
}

export interface JournalState {
  /** The stream's last seq (0 when it has none): the next append is after it. */
  seq: number;
  decisions: ToolEvidenceDecision[];
}

/** Every decision the run's stream holds, in order. */
export async function readDecisions(journal: AgentStreamJournal, streamId: string): Promise<JournalState> {
  const decisions: ToolEvidenceDecision[] = [];
  let seq = 0;
  for (;;) {
    const frames = await journal.read(streamId, seq, 1000);
    for (const frame of frames) {
      seq = frame.seq;
      const body = JSON.parse(frame.body) as ToolEvidenceDecision;
      if (body?.type === 'tool-evidence-decision') decisions.push(body);
    }
    if (frames.length < 1000) return { seq, decisions };
  }
}

/** Appends one decision after `seq`; a journal that moved since refuses it (JournalConflictError) and nothing is written. */
export async function appendDecision(journal: AgentStreamJournal, streamId: string, seq: number, scope: string, decision: ToolEvidenceDecision): Promise<number> {
  const frame: JournalFrame = { seq: seq + 1, body: JSON.stringify(decision), end: true };
  await journal.append(streamId, seq, [frame], { scope });
  return seq + 1;
}

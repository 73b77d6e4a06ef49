/**
 * How a package becomes messages. Rendering is a pure function of the
 * package's blocks and manifest, so a package read back from its blob renders
 * exactly as it did when it was compiled (a reopened step sends the same bytes).
 *
 *   request  = history, then the retrieval block (when it is new), then the
 *              working-memory tail
 *   history += the retrieval block, after the call succeeded (and the tail,
 *              on a model whose preserved thinking binds the transcript prefix)
 */
import type { ModelMessage } from '../models/types.js';
import type { ContextBlock, ContextManifest, ContextPackage } from './types.js';

/** The opening of every retrieval block the compiler appends: `<cairn_context pass="P" step="S">`. */
export const contextMarker = (pass: number, step: number) => `<cairn_context pass="${pass}" step="${step}">`;

function retrievalText(blocks: readonly ContextBlock[], manifest: ContextManifest): string | null {
  const retrieval = blocks.filter((b) => b.kind === 'retrieval' && b.records.length > 0);
  if (retrieval.length === 0) return null;
  const lines = [contextMarker(manifest.pass, manifest.step)];
  for (const block of retrieval) {
    for (const record of block.records) lines.push(`[${block.source} ${record.id}] ${record.text}`);
  }
  lines.push('</cairn_context>');
  return lines.join('\n');
}

function workingMemoryText(blocks: readonly ContextBlock[]): string | null {
  const block = blocks.find((b) => b.kind === 'working-memory');
  if (!block || block.records.length === 0) return null;
  return ['<cairn_working_memory>', ...block.records.map((r) => r.text), '</cairn_working_memory>'].join('\n');
}

/** The retrieval message, when this step appends one. */
export function retrievalMessage(pkg: Pick<ContextPackage, 'blocks' | 'manifest'>): ModelMessage | null {
  if (pkg.manifest.placement.retrieval !== 'appended') return null;
  const text = retrievalText(pkg.blocks, pkg.manifest);
  return text === null ? null : { role: 'user', content: text };
}

/** The working-memory tail message, if any. */
export function tailMessage(pkg: Pick<ContextPackage, 'blocks'>): ModelMessage | null {
  const text = workingMemoryText(pkg.blocks);
  return text === null ? null : { role: 'user', content: text };
}

/** The messages of the step's request. */
export function requestMessages(history: readonly ModelMessage[], pkg: Pick<ContextPackage, 'blocks' | 'manifest'>): ModelMessage[] {
  const out = [...history];
  const retrieval = retrievalMessage(pkg);
  if (retrieval) out.push(retrieval);
  const tail = tailMessage(pkg);
  if (tail) out.push(tail);
  return out;
}

/** What joins the history once the call succeeded, before the model's turn. */
export function historyAdditions(pkg: Pick<ContextPackage, 'blocks' | 'manifest'>): ModelMessage[] {
  const out: ModelMessage[] = [];
  const retrieval = retrievalMessage(pkg);
  if (retrieval) out.push(retrieval);
  if (pkg.manifest.placement.tailKept) {
    const tail = tailMessage(pkg);
    if (tail) out.push(tail);
  }
  return out;
}

/** The text of a message, as the estimator counts it. */
export function messageText(message: ModelMessage): string {
  const content = (message as { content: unknown }).content;
  const text = typeof content === 'string' ? content : JSON.stringify(content ?? '');
  const calls = message.role === 'assistant' && message.toolCalls ? JSON.stringify(message.toolCalls) : '';
  return text + calls;
}

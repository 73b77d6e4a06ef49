/**
 * The extraction request of a completed V3 run (versionedMemory.extract):
 * the input's last user turn and the run's own assistant turns, each under
 * the id the chat projection gives it (`<runId>:<index>`, or a stored chat's
 * own id for an input message the run continued). Pure: built from the
 * stored transcript, so a reconciliation builds the same request again.
 */
import type { ModelMessage } from '../models/types.js';
import { isRecallMessage, lastUserIndex, userText } from '../memory/recall.js';
import type { MemoryExtractionMessage, MemoryExtractionRequest } from '../memory/versioned/types.js';
import type { VersionedMemoryExtractOptions } from './versioned-options.js';

/** The text of an assistant turn (its text parts, for a message of parts). */
function assistantText(message: ModelMessage): string {
  if (message.role !== 'assistant') return '';
  const content = (message as { content: unknown }).content;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: { type?: string; text?: unknown }) => (part?.type === 'text' && typeof part.text === 'string' ? part.text : ''))
    .filter(Boolean).join('\n');
}

/** The transcript positions an extraction reads, with their role and text. */
export function extractionPositions(
  transcript: readonly ModelMessage[], inputCount: number, options: VersionedMemoryExtractOptions,
): { index: number; role: 'user' | 'assistant'; text: string }[] {
  const input = transcript.slice(0, inputCount);
  const last = lastUserIndex(input);
  const out: { index: number; role: 'user' | 'assistant'; text: string }[] = [];
  if (last !== -1 && userText(input[last]!).trim() !== '') out.push({ index: last, role: 'user', text: userText(input[last]!) });
  const turns: { index: number; role: 'assistant'; text: string }[] = [];
  transcript.forEach((message, index) => {
    if (index < inputCount || isRecallMessage(message) || message.role !== 'assistant') return;
    const text = assistantText(message);
    if (text.trim() !== '') turns.push({ index, role: 'assistant', text });
  });
  return [...out, ...(options.maxTurns === undefined ? turns : turns.slice(-options.maxTurns))];
}

/** The request: `ids` are the chat projection's ids of the whole transcript (messageIdsOf), or null for `<runId>:<index>`. */
export function extractionRequest(
  input: { runId: string; operationId: string; transcript: readonly ModelMessage[]; inputCount: number; options: VersionedMemoryExtractOptions },
  ids: readonly string[] | null,
): MemoryExtractionRequest {
  const messages: MemoryExtractionMessage[] = extractionPositions(input.transcript, input.inputCount, input.options)
    .map((p) => ({ id: ids?.[p.index] ?? `${input.runId}:${p.index}`, role: p.role, text: p.text }));
  return { operationId: input.operationId, runId: input.runId, messages };
}

/**
 * The request a saved claim cites, built again from the stored transcript: `<runId>:<index>` is that message,
 * any other id (a stored chat's own) is the input's last user turn. Null when a cited message is not there.
 */
export function requestOfClaim(
  input: { runId: string; operationId: string; transcript: readonly ModelMessage[]; inputCount: number }, claimed: readonly string[],
): MemoryExtractionRequest | null {
  const prefix = `${input.runId}:`;
  const messages: MemoryExtractionMessage[] = [];
  for (const id of claimed) {
    const own = id.startsWith(prefix) && /^\d+$/.test(id.slice(prefix.length));
    const index = own ? Number(id.slice(prefix.length)) : lastUserIndex(input.transcript.slice(0, input.inputCount));
    const message = input.transcript[index];
    if (!message) return null;
    const text = message.role === 'user' ? userText(message) : assistantText(message);
    if ((message.role !== 'user' && message.role !== 'assistant') || text.trim() === '') return null;
    messages.push({ id, role: message.role, text });
  }
  return { operationId: input.operationId, runId: input.runId, messages };
}

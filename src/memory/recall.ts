/**
 * The recall of a run: once, before its first model call, with the last user
 * message as the query. The memories found enter the history as one appended
 * system message marked `providerMetadata.cairn.memoryRecall`, so every later
 * step and every resume sends the same prefix. A failing store or embedder
 * is a warning and the run goes on without memories.
 */
import { serializeError } from '../errors/index.js';
import type { ModelMessage } from '../models/types.js';
import { charged, type ChargeTarget } from './run-charge.js';
import type { RunMemoryOptions } from './run-options.js';
import type { AgentRunMemoryRecall } from './run-types.js';
import type { MemoryEmbedding } from './types.js';

type Message = ModelMessage & { providerMetadata?: Record<string, unknown> };

/** True for the system message a recall appended. */
export function isRecallMessage(message: unknown): boolean {
  const m = message as { role?: unknown; providerMetadata?: { cairn?: { memoryRecall?: unknown } } } | null;
  return m?.role === 'system' && m.providerMetadata?.cairn?.memoryRecall !== undefined;
}

/** The text of a user message (its text parts, for a message of parts). */
export function userText(message: ModelMessage): string {
  if (message.role !== 'user') return '';
  if (typeof message.content === 'string') return message.content;
  return message.content.map((part) => (part.type === 'text' ? part.text : '')).filter(Boolean).join('\n');
}

export const lastUserIndex = (messages: readonly ModelMessage[]) => messages.map((m) => m.role).lastIndexOf('user');

/** Embeds a text with the seams' embedder (charged to the run's context), or gives nothing without one. */
export async function embed(target: ChargeTarget, memory: RunMemoryOptions, key: string, text: string, signal?: AbortSignal): Promise<MemoryEmbedding | undefined> {
  const embedder = memory.seams.embedder;
  if (!embedder) return undefined;
  return charged(target, 'embedder', key, text.length, async () => {
    const answer = await embedder({ text, ...(signal ? { signal } : {}) });
    if (!answer || !Array.isArray(answer.vector) || !answer.vector.every((x) => typeof x === 'number' && Number.isFinite(x))) {
      throw new TypeError('The embedder must answer { vector: number[], model? }.');
    }
    return { value: { vector: [...answer.vector], ...(answer.model !== undefined ? { model: answer.model } : {}) }, usage: answer.usage };
  });
}

export interface RecallResult {
  /** The messages the run starts with: the input, and the recall message after it when memories were found. */
  messages: ModelMessage[];
  record: AgentRunMemoryRecall;
}

export async function recallMemories(
  target: ChargeTarget, memory: RunMemoryOptions, input: readonly ModelMessage[], signal?: AbortSignal,
): Promise<RecallResult> {
  const messages = [...input];
  const last = lastUserIndex(messages);
  const skipped: RecallResult = { messages, record: { status: 'skipped', count: 0 } };
  if (memory.recallLimit === 0 || last === -1) return skipped;
  // A history that carries a recall after its last user message has been recalled for already.
  if (messages.slice(last + 1).some(isRecallMessage)) return skipped;
  const query = userText(messages[last]!);
  try {
    const embedding = await embed(target, memory, `recall:${target.runId}`, query, signal);
    const found = await memory.seams.store.search({
      scope: memory.scope, query, limit: memory.recallLimit, now: memory.seams.clock.now(), ...(embedding ? { embedding } : {}),
    });
    if (found.embeddingMismatches > 0) {
      target.emit({
        type: 'warning', setting: 'memory', code: 'embedding-mismatch',
        message: `The recall could not compare ${found.embeddingMismatches} stored memories with the query's embedding (none, or another length or model): they were left out.`,
      });
    }
    const record: AgentRunMemoryRecall = {
      status: 'recalled', count: found.hits.length, ...(found.embeddingMismatches > 0 ? { embeddingMismatches: found.embeddingMismatches } : {}),
    };
    if (found.hits.length === 0) return { messages, record };
    const recall: Message = {
      role: 'system',
      content: `Memories from earlier conversations with this user:\n${found.hits.map((hit) => `- ${hit.record.text}`).join('\n')}`,
      providerMetadata: { cairn: { memoryRecall: { count: found.hits.length } } },
    };
    return { messages: [...messages, recall as ModelMessage], record };
  } catch (error) {
    const e = serializeError(error);
    target.emit({ type: 'warning', setting: 'memory', message: `The memory recall failed (${e.message}); the run goes on without memories.` });
    return { messages, record: { status: 'failed', count: 0, error: { name: e.name, code: e.code, message: e.message } } };
  }
}

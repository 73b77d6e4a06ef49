/**
 * The extraction's two questions to the memory LLM, and the checks of its
 * answers. First the facts worth keeping, from the input's last user turn
 * and the run's own turns (never the recall message, the finalization prompt
 * or repair and verifier feedback); then, beside the stored memories closest
 * to them, one event per fact: ADD, UPDATE, DELETE or NONE. An answer that is
 * not the JSON asked for is a MemoryError `memory_llm_invalid`.
 */
import { MemoryError } from './errors.js';
import { charged, type ChargeTarget } from './run-charge.js';
import { isRecallMessage, lastUserIndex, userText } from './recall.js';
import type { RunMemoryOptions } from './run-options.js';
import type { MemoryLlmAnswer } from './run-types.js';
import type { ModelMessage } from '../models/types.js';
import type { MemoryPlan, MemoryWrite } from '../../machines/memory-intent-types.js';

/** The first question: contains "extract", the second does not (a test double can tell them apart, as the spec's example does). */
export const FACTS_PROMPT =
  'You extract facts worth remembering about the user from a conversation: preferences, plans, details about them. ' +
  'Answer with JSON only, in the form {"facts":["..."]}; answer {"facts":[]} when there is nothing to keep.';
export const EVENTS_PROMPT =
  'You keep a user\'s long-term memory up to date. For each new fact, compare it with the stored memories and answer one event: ' +
  'ADD a new memory, UPDATE a stored one (give its id and the new text), DELETE a stored one that the fact contradicts (give its id), ' +
  'or NONE. Answer with JSON only, in the form {"memory":[{"event":"ADD","text":"..."},{"event":"UPDATE","id":"...","text":"..."},' +
  '{"event":"DELETE","id":"..."},{"event":"NONE"}]}.';

/**
 * The conversation the extraction reads: the input's last user turn, then
 * the assistant turns the run made. The user turns the run adds itself
 * (finalization, repair, verifier feedback) and the recall message are left out.
 */
export function extractionSource(transcript: readonly ModelMessage[], inputCount: number): string {
  const input = transcript.slice(0, inputCount);
  const last = lastUserIndex(input);
  const lines: string[] = [];
  if (last !== -1) lines.push(`user: ${userText(input[last]!)}`);
  for (const message of transcript.slice(inputCount)) {
    if (isRecallMessage(message) || message.role !== 'assistant') continue;
    if (message.content.trim() !== '') lines.push(`assistant: ${message.content}`);
  }
  return lines.join('\n');
}

function parseJson(text: string, what: string): Record<string, unknown> {
  const trimmed = text.trim().replace(/^```(?:json)?\s*/i, '').replace(/\s*```$/, '');
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    throw new MemoryError('memory_llm_invalid', `The memory LLM's ${what} is not JSON.`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new MemoryError('memory_llm_invalid', `The memory LLM's ${what} is not a JSON object.`);
  }
  return value as Record<string, unknown>;
}

export function parseFacts(text: string): string[] {
  const facts = parseJson(text, 'facts answer').facts;
  if (!Array.isArray(facts)) throw new MemoryError('memory_llm_invalid', 'The memory LLM\'s facts answer has no "facts" array.');
  return facts.map((fact) => {
    const value = typeof fact === 'string' ? fact : (fact as { text?: unknown } | null)?.text;
    if (typeof value !== 'string' || value.trim() === '') throw new MemoryError('memory_llm_invalid', 'Each fact must be a non-empty string.');
    return value.trim();
  });
}

const EVENTS = new Set(['ADD', 'UPDATE', 'DELETE', 'NONE']);

/** The events answer as a plan: deletions, then writes (an ADD gets its record id now, so a replay of the plan writes the same ids). */
export function parseEvents(text: string, known: ReadonlySet<string>, newId: () => string): MemoryPlan {
  const events = parseJson(text, 'memory answer').memory;
  if (!Array.isArray(events)) throw new MemoryError('memory_llm_invalid', 'The memory LLM\'s memory answer has no "memory" array.');
  const deletes: string[] = [];
  const writes: MemoryWrite[] = [];
  const texts = new Set<string>();
  for (const raw of events) {
    const e = raw as { event?: unknown; id?: unknown; text?: unknown } | null;
    const event = typeof e?.event === 'string' ? e.event.toUpperCase() : undefined;
    if (!event || !EVENTS.has(event)) throw new MemoryError('memory_llm_invalid', `Unknown memory event ${JSON.stringify(e?.event ?? null)}.`);
    if (event === 'NONE') continue;
    if (event !== 'ADD' && (typeof e!.id !== 'string' || !known.has(e!.id))) {
      throw new MemoryError('memory_llm_invalid', `A ${event} event must name one of the stored memories it was shown by id.`);
    }
    if (event === 'DELETE') {
      if (!deletes.includes(e!.id as string)) deletes.push(e!.id as string);
      continue;
    }
    if (typeof e!.text !== 'string' || e!.text.trim() === '') throw new MemoryError('memory_llm_invalid', `A ${event} event needs a text.`);
    const text = e!.text.trim();
    // Two writes of one text would be folded into one record by the store's dedup: the plan counts it once.
    const normalized = text.replace(/\s+/g, ' ');
    if (texts.has(normalized)) continue;
    texts.add(normalized);
    writes.push(event === 'ADD' ? { event: 'ADD', id: newId(), text } : { event: 'UPDATE', id: e!.id as string, text });
  }
  return { deletes: deletes.filter((id) => !writes.some((w) => w.id === id)), writes };
}

async function ask(target: ChargeTarget, memory: RunMemoryOptions, key: string, system: string, user: string, signal?: AbortSignal): Promise<string> {
  return charged(target, 'llm', key, system.length + user.length, async () => {
    const answer: MemoryLlmAnswer = await memory.seams.llm({ system, user, ...(signal ? { signal } : {}) });
    if (typeof answer === 'string') return { value: answer, usage: undefined };
    if (answer && typeof answer.text === 'string') return { value: answer.text, usage: answer.usage };
    throw new MemoryError('memory_llm_invalid', 'The memory LLM must answer a string or { text, usage? }.');
  });
}

/** Asks the memory LLM both questions and returns the plan; nothing is written. */
export async function planExtraction(
  target: ChargeTarget, memory: RunMemoryOptions, operationId: string, source: string, signal?: AbortSignal,
): Promise<MemoryPlan> {
  if (source.trim() === '') return { deletes: [], writes: [] };
  const facts = parseFacts(await ask(target, memory, `${operationId}:facts`, FACTS_PROMPT, source, signal));
  if (facts.length === 0) return { deletes: [], writes: [] };
  const stored = new Map<string, string>();
  for (const fact of facts) {
    const { hits } = await memory.seams.store.search({ scope: memory.scope, query: fact, limit: 5, now: memory.seams.clock.now() });
    for (const hit of hits) stored.set(hit.record.id, hit.record.text);
  }
  const user = JSON.stringify({ memories: [...stored].map(([id, text]) => ({ id, text })), facts });
  const plan = parseEvents(await ask(target, memory, `${operationId}:events`, EVENTS_PROMPT, user, signal), new Set(stored.keys()), memory.seams.generateId);
  return plan;
}

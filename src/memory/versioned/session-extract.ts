/**
 * A session's extraction: the question to the memory LLM, the strict check
 * of its answer, and the plan it becomes (one `add` a new fact, citing the
 * messages by their ids). Nothing here writes; the session commits the plan
 * with its receipt in one call.
 */
import { MemoryError } from '../errors.js';
import type { MemoryExtractionMessage, MemoryLlmAnswer, VersionedMemoryMutation, VersionedMemoryRecord } from './types.js';

/**
 * What the memory LLM is asked. Its contract: the messages come labelled
 * `s0`, `s1`, ... in the request's order; the answer is JSON only, an object
 * with a `facts` list, each fact a text and the labels of the messages it
 * comes from.
 */
export const EXTRACTION_PROMPT =
  'You keep a long-term memory about the user. Read the labelled messages (s0, s1, ...) and extract the facts about the user ' +
  'worth remembering in later conversations: preferences, plans, details about them and their work. Leave out small talk, ' +
  'questions, and anything only the assistant said. Each fact is one short sentence that stands on its own. ' +
  'Answer with JSON only, in the form {"facts":[{"text":"...","sources":["s0"]}]}, where sources are the labels of the ' +
  'messages the fact comes from; answer {"facts":[]} when there is nothing to keep.';

/** The label a request's message gets: `s<position>`. */
export const labelOf = (index: number) => `s${index}`;

/** The messages as the LLM gets them: each with its label. */
export function labelled(messages: readonly MemoryExtractionMessage[]): (MemoryExtractionMessage & { label: string })[] {
  return messages.map((m, i) => ({ id: m.id, role: m.role, text: m.text, label: labelOf(i) }));
}

const invalid = (message: string) => new MemoryError('memory_llm_invalid', `The memory LLM's answer ${message}`);

/**
 * The answer, parsed: JSON (a ```json fence around it is allowed), an object
 * with a `facts` list, each fact an object with a non-empty `text` and a
 * non-empty list of `sources` labels. Other keys are ignored. Anything else
 * is `memory_llm_invalid`.
 */
export function parseAnswer(answer: unknown): MemoryLlmAnswer {
  if (typeof answer !== 'string') throw invalid('is not text.');
  const trimmed = answer.trim().replace(/^```(?:json)?\s*/i, '').replace(/\s*```$/, '');
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    throw invalid('is not JSON.');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalid('is not a JSON object.');
  const facts = (value as { facts?: unknown }).facts;
  if (!Array.isArray(facts)) throw invalid('has no "facts" list.');
  return {
    facts: facts.map((fact: unknown, i) => {
      const f = fact as { text?: unknown; sources?: unknown } | null;
      if (f === null || typeof f !== 'object' || Array.isArray(f)) throw invalid(`has a fact ${i} that is not an object { text, sources }.`);
      if (typeof f.text !== 'string' || f.text.trim() === '') throw invalid(`has a fact ${i} without a text.`);
      if (!Array.isArray(f.sources) || f.sources.length === 0 || !f.sources.every((s) => typeof s === 'string')) {
        throw invalid(`has a fact ${i} whose "sources" is not a non-empty list of labels.`);
      }
      return { text: f.text.trim(), sources: [...new Set(f.sources as string[])] };
    }),
  };
}

/** The text two facts are compared by: whitespace collapsed, case folded. */
export const sameText = (text: string) => text.trim().replace(/\s+/g, ' ').toLowerCase();

/**
 * The plan: one `add` (origin `inferred`) for each fact whose text no active
 * record of the scope holds and no earlier fact of the answer holds, citing
 * the messages its labels name. A label the request does not have is
 * `memory_source_unknown` (checked for every fact, the skipped ones too).
 */
export function planOf(
  answer: MemoryLlmAnswer,
  messages: readonly MemoryExtractionMessage[],
  active: readonly VersionedMemoryRecord[],
  newId: () => string,
): VersionedMemoryMutation[] {
  const byLabel = new Map(messages.map((m, i) => [labelOf(i), m.id]));
  const cited = answer.facts.map((fact) => fact.sources.map((label) => {
    const messageId = byLabel.get(label);
    if (messageId === undefined) {
      throw new MemoryError('memory_source_unknown', `The memory LLM cited ${JSON.stringify(label)}, a label the request does not have (it has ${messages.length === 0 ? 'no messages' : `s0..${labelOf(messages.length - 1)}`}).`);
    }
    return { messageId };
  }));
  const held = new Set(active.filter((r) => r.status === 'active' && r.text !== null).map((r) => sameText(r.text!)));
  const plan: VersionedMemoryMutation[] = [];
  answer.facts.forEach((fact, i) => {
    const key = sameText(fact.text);
    if (held.has(key)) return;
    held.add(key);
    plan.push({ op: 'add', id: newId(), text: fact.text, origin: 'inferred', sources: cited[i]! });
  });
  return plan;
}

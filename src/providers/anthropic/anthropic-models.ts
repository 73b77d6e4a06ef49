/**
 * What the adapter must know per Claude family to build a request the API
 * accepts: how the model thinks, which `output_config.effort` levels it takes,
 * which sampling parameters it refuses, and the `max_tokens` it gets when the
 * run sets none. It mirrors the Anthropic entries of src/models/profiles.ts
 * (which `doctor` reads); a provider may not import that module, so the few
 * facts the wire needs are restated here, checked against the same pages:
 * https://platform.claude.com/docs/en/build-with-claude/effort and
 * .../adaptive-thinking, .../extended-thinking.
 */
import type { ModelSettings } from '../../models/types.js';

type EffortLevel = NonNullable<ModelSettings['effort']>;

/**
 * `budget`: extended thinking with `thinking: { type: 'enabled', budget_tokens }`.
 * `adaptive`: `thinking: { type: 'adaptive' }`, the depth steered by `output_config.effort`
 * (Opus 4.7 and later refuse `budget_tokens`; on 4.6 it is deprecated).
 */
export type ThinkingMode = 'budget' | 'adaptive';

export interface ClaudeFamily {
  thinking: ThinkingMode;
  /** Levels `output_config.effort` takes; null when the model has no effort parameter. */
  effortLevels: readonly EffortLevel[] | null;
  /** `both`: temperature and top_p together; `one`: not both in one request; `none`: refuses both. */
  sampling: 'both' | 'one' | 'none';
  /** `max_tokens` sent when the run sets no maxOutputTokens and no thinking budget applies. */
  defaultMaxTokens: number;
}

/** Answer room added to a thinking budget when the run sets no maxOutputTokens. */
export const ANSWER_ROOM_TOKENS = 4096;

/**
 * Thinking budgets of Cairn's effort levels for `budget` models. The API's
 * minimum is 1024; `max` plus the answer room (31,744) stays under the 32,000
 * output tokens of Opus 4 / 4.1, the smallest output limit of a thinking Claude.
 */
export const THINKING_BUDGETS: Readonly<Record<Exclude<EffortLevel, 'none'>, number>> = Object.freeze({
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 16384,
  xhigh: 24576,
  max: 27648,
});

/** The smallest `budget_tokens` the API takes. */
export const MIN_THINKING_BUDGET = 1024;

const DATED = '(?:-\\d{8}|-latest)?$';
const FAMILIES: ReadonlyArray<{ match: RegExp; family: ClaudeFamily }> = [
  {
    match: new RegExp(`^claude-opus-4-[78]${DATED}`),
    family: { thinking: 'adaptive', effortLevels: ['low', 'medium', 'high', 'xhigh', 'max'], sampling: 'none', defaultMaxTokens: 16000 },
  },
  {
    match: new RegExp(`^claude-(?:opus|sonnet)-4-6${DATED}`),
    family: { thinking: 'adaptive', effortLevels: ['low', 'medium', 'high', 'max'], sampling: 'one', defaultMaxTokens: 16000 },
  },
  {
    match: new RegExp(`^claude-opus-4-5${DATED}`),
    family: { thinking: 'budget', effortLevels: ['low', 'medium', 'high'], sampling: 'one', defaultMaxTokens: 8192 },
  },
  {
    match: new RegExp(`^claude-(?:(?:sonnet|haiku)-4-5|opus-4-1)${DATED}`),
    family: { thinking: 'budget', effortLevels: null, sampling: 'one', defaultMaxTokens: 8192 },
  },
  // Claude 3 Haiku / Sonnet / Opus write at most 4,096 tokens.
  {
    match: new RegExp(`^claude-3-(?:haiku|sonnet|opus)${DATED}`),
    family: { thinking: 'budget', effortLevels: null, sampling: 'both', defaultMaxTokens: 4096 },
  },
];

/** Any other id (Claude 3.5 / 3.7, Opus 4 and Sonnet 4, ids Cairn does not know yet). */
const OTHER: ClaudeFamily = { thinking: 'budget', effortLevels: null, sampling: 'both', defaultMaxTokens: 8192 };

export function claudeFamily(modelId: string): ClaudeFamily {
  return FAMILIES.find((f) => f.match.test(modelId))?.family ?? OTHER;
}

/**
 * The level a model takes for a requested one: the level itself, or the
 * nearest level it accepts (lower first, so a request never spends more than
 * it asked for, unless nothing lower exists).
 */
export function nearestEffort(requested: EffortLevel, accepted: readonly EffortLevel[]): EffortLevel {
  if (accepted.includes(requested)) return requested;
  const order: readonly EffortLevel[] = ['minimal', 'low', 'medium', 'high', 'xhigh', 'max'];
  const at = order.indexOf(requested);
  for (let i = at - 1; i >= 0; i--) if (accepted.includes(order[i]!)) return order[i]!;
  for (let i = at + 1; i < order.length; i++) if (accepted.includes(order[i]!)) return order[i]!;
  return accepted[0]!;
}

/**
 * Cairn's `effort` as Gemini's thinkingConfig. Gemini 3 and later take a
 * thinking level; Gemini 2.5 (and any other model) a token budget. The budgets
 * are the ones Google's OpenAI-compatible endpoint documents for
 * `reasoning_effort` (low 1,024, medium 8,192, high 24,576, none 0).
 */
import type { ModelCallWarning, ModelSettings } from '../../models/types.js';
import type { GeminiThinkingConfig } from './google-api.js';

type EffortLevel = NonNullable<ModelSettings['effort']>;

const BUDGETS: Record<Exclude<EffortLevel, 'none'>, number> = {
  minimal: 512, // the smallest budget every 2.5 model accepts (Flash-Lite starts at 512)
  low: 1024,
  medium: 8192,
  high: 24576,
  xhigh: 24576,
  max: 24576,
};

/** The major version of a `gemini-<major>...` id, or undefined for other models (Gemma, tuned models). */
function geminiMajor(modelId: string): number | undefined {
  const match = /^(?:models\/)?gemini-(\d+)/.exec(modelId);
  return match ? Number(match[1]) : undefined;
}

const isPro = (modelId: string) => /-pro\b/.test(modelId);

export interface ThinkingChoice {
  config?: GeminiThinkingConfig;
  warning?: ModelCallWarning;
}

/** The thinkingConfig for an effort on a model; a warning when the model cannot take it. */
export function thinkingFor(modelId: string, effort: EffortLevel | undefined): ThinkingChoice {
  if (effort === undefined) return {};
  const major = geminiMajor(modelId);
  if (major !== undefined && major >= 3) {
    // Gemini 3 cannot turn thinking off: 'minimal' is its least; the Pro models start at 'low'.
    const level = effort === 'none' || effort === 'minimal'
      ? (isPro(modelId) ? 'low' : 'minimal')
      : effort === 'low' || effort === 'medium' ? effort : 'high';
    return { config: { thinkingLevel: level, includeThoughts: true } };
  }
  if (effort === 'none') {
    if (isPro(modelId)) {
      return {
        warning: {
          type: 'unsupported-setting',
          setting: 'effort',
          details: `${modelId} cannot turn thinking off; effort 'none' was left out and the model thinks as it decides.`,
        },
      };
    }
    return { config: { thinkingBudget: 0 } };
  }
  // 2.5 Pro goes up to 32,768 thinking tokens, the Flash models to 24,576.
  const budget = (effort === 'xhigh' || effort === 'max') && isPro(modelId) ? 32768 : BUDGETS[effort];
  return { config: { thinkingBudget: budget, includeThoughts: true } };
}

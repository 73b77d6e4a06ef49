/**
 * Model profiles: what each model Cairn knows accepts in a request — the
 * sampling parameters, the effort levels, the temperature range and prompt
 * caching — so `doctor` can say before a run that a request would be refused.
 *
 * Every entry was checked against the provider's published documentation (the
 * `source` of each profile) when it was written. None is live-verified: no test
 * calls a provider, and providers change what their models accept. A model that
 * matches no profile is reported as unknown and its checks are skipped; the
 * run's `capabilities` option can correct a profile that has gone stale.
 */

/** Effort levels across providers, lowest to highest. Each model accepts a subset. */
export const EFFORT_LEVELS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;
export type EffortLevel = (typeof EFFORT_LEVELS)[number];

/**
 * How a model caches a repeated prompt prefix: `explicit` (the request marks
 * what to cache), `automatic` (the provider does it on its own), `none`.
 */
export type PromptCachingSupport = 'explicit' | 'automatic' | 'none';

/** What a model accepts. `capabilities` on a run overrides any of these fields. */
export interface ModelCapabilities {
  /** The accepted temperature range; `null` when the model rejects `temperature`. */
  temperature: { min: number; max: number } | null;
  /** Whether the model accepts `topP` (always in [0, 1]). */
  topP: boolean;
  /** The model takes `temperature` or `topP`, not both in one request. */
  oneSampler: boolean;
  /** Sampling parameters are accepted only at these effort levels (unset effort counts as the model's default). */
  samplingOnlyAtEffort: readonly EffortLevel[] | null;
  /** Effort levels accepted; `null` when the model takes no effort parameter. */
  effort: readonly EffortLevel[] | null;
  /** The effort the model uses when none is given (for `samplingOnlyAtEffort`). */
  defaultEffort: EffortLevel | null;
  promptCaching: PromptCachingSupport;
}

export interface ModelProfile extends ModelCapabilities {
  /** The provider, as a model's `provider` names it (`anthropic`, `openai`, `google`). */
  provider: string;
  /** A readable family name, for messages. */
  family: string;
  /** Matches the model ids of the family. */
  match: RegExp;
  /** The documentation the profile was checked against. */
  source: string;
}

// Shared shapes, so each entry below states only what sets it apart.
const CLAUDE: Omit<ModelProfile, 'family' | 'match' | 'source'> = {
  provider: 'anthropic',
  temperature: { min: 0, max: 1 },
  topP: true,
  oneSampler: false,
  samplingOnlyAtEffort: null,
  effort: null,
  defaultEffort: null,
  promptCaching: 'explicit',
};
const CLAUDE_EFFORT_DOC = 'https://platform.claude.com/docs/en/build-with-claude/effort';
const CLAUDE_MODELS_DOC = 'https://platform.claude.com/docs/en/about-claude/models/overview';

const OPENAI_CHAT: Omit<ModelProfile, 'family' | 'match' | 'source'> = {
  provider: 'openai',
  temperature: { min: 0, max: 2 },
  topP: true,
  oneSampler: false,
  samplingOnlyAtEffort: null,
  effort: null,
  defaultEffort: null,
  promptCaching: 'automatic',
};
// Reasoning models refuse temperature and top_p (only the default is allowed).
const OPENAI_REASONING: Omit<ModelProfile, 'family' | 'match' | 'source'> = {
  ...OPENAI_CHAT,
  temperature: null,
  topP: false,
  effort: ['low', 'medium', 'high'],
  defaultEffort: 'medium',
};
const OPENAI_REASONING_DOC = 'https://platform.openai.com/docs/guides/reasoning';
const OPENAI_CACHING_DOC = 'https://platform.openai.com/docs/guides/prompt-caching';

const GEMINI: Omit<ModelProfile, 'family' | 'match' | 'source'> = {
  provider: 'google',
  temperature: { min: 0, max: 2 },
  topP: true,
  oneSampler: false,
  samplingOnlyAtEffort: null,
  // Gemini 2.5 thinks by a token budget; Cairn's effort maps onto it as the
  // provider's OpenAI-compatible endpoint does (low, medium, high; none turns thinking off).
  effort: ['none', 'low', 'medium', 'high'],
  defaultEffort: null,
  promptCaching: 'automatic',
};
const GEMINI_THINKING_DOC = 'https://ai.google.dev/gemini-api/docs/thinking';

/**
 * The profiles, most specific first: the first whose provider and `match` fit
 * a model is its profile. Dated snapshots (`claude-sonnet-4-5-20250929`,
 * `gpt-4o-2024-08-06`) match their family.
 */
export const MODEL_PROFILES: readonly ModelProfile[] = Object.freeze([
  // ---- Anthropic. Opus 4.7 and later refuse temperature, top_p and top_k.
  {
    ...CLAUDE, family: 'Claude Opus 4.7 / 4.8', match: /^claude-opus-4-[78](?:-\d{8})?$/,
    temperature: null, topP: false, effort: ['low', 'medium', 'high', 'xhigh', 'max'], defaultEffort: 'high',
    source: CLAUDE_EFFORT_DOC,
  },
  {
    ...CLAUDE, family: 'Claude Opus 4.6 / Sonnet 4.6', match: /^claude-(?:opus|sonnet)-4-6(?:-\d{8})?$/,
    oneSampler: true, effort: ['low', 'medium', 'high', 'max'], defaultEffort: 'high', source: CLAUDE_EFFORT_DOC,
  },
  {
    ...CLAUDE, family: 'Claude Opus 4.5', match: /^claude-opus-4-5(?:-\d{8})?$/,
    oneSampler: true, effort: ['low', 'medium', 'high'], defaultEffort: 'high', source: CLAUDE_EFFORT_DOC,
  },
  // From Opus 4.1 on, a request may set temperature or top_p but not both.
  { ...CLAUDE, family: 'Claude Sonnet 4.5 / Haiku 4.5', match: /^claude-(?:sonnet|haiku)-4-5(?:-\d{8})?$/, oneSampler: true, source: CLAUDE_MODELS_DOC },
  { ...CLAUDE, family: 'Claude Opus 4.1', match: /^claude-opus-4-1(?:-\d{8})?$/, oneSampler: true, source: CLAUDE_MODELS_DOC },
  { ...CLAUDE, family: 'Claude Opus 4 / Sonnet 4', match: /^claude-(?:opus|sonnet)-4(?:-0)?(?:-\d{8})?$/, source: CLAUDE_MODELS_DOC },

  // ---- OpenAI
  { ...OPENAI_REASONING, family: 'GPT-5 pro', match: /^gpt-5-pro(?:-\d{4}-\d{2}-\d{2})?$/, effort: ['high'], defaultEffort: 'high', source: OPENAI_REASONING_DOC },
  {
    // GPT-5.1 reasons at effort 'none' by default and then takes sampling parameters.
    ...OPENAI_REASONING, family: 'GPT-5.1', match: /^gpt-5\.1(?:-\d{4}-\d{2}-\d{2})?$/,
    temperature: { min: 0, max: 2 }, topP: true, samplingOnlyAtEffort: ['none'],
    effort: ['none', 'low', 'medium', 'high'], defaultEffort: 'none', source: OPENAI_REASONING_DOC,
  },
  {
    ...OPENAI_REASONING, family: 'GPT-5', match: /^gpt-5(?:-(?:mini|nano))?(?:-\d{4}-\d{2}-\d{2})?$/,
    effort: ['minimal', 'low', 'medium', 'high'], source: OPENAI_REASONING_DOC,
  },
  // o1-mini and o1-preview predate reasoning_effort.
  { ...OPENAI_REASONING, family: 'o1-mini / o1-preview', match: /^o1-(?:mini|preview)(?:-\d{4}-\d{2}-\d{2})?$/, effort: null, defaultEffort: null, source: OPENAI_REASONING_DOC },
  { ...OPENAI_REASONING, family: 'o-series', match: /^o[134](?:-(?:mini|pro))?(?:-\d{4}-\d{2}-\d{2})?$/, source: OPENAI_REASONING_DOC },
  { ...OPENAI_CHAT, family: 'GPT-4.1', match: /^gpt-4\.1(?:-(?:mini|nano))?(?:-\d{4}-\d{2}-\d{2})?$/, source: OPENAI_CACHING_DOC },
  // The first GPT-4o snapshot predates prompt caching.
  { ...OPENAI_CHAT, family: 'GPT-4o (2024-05-13)', match: /^gpt-4o-2024-05-13$/, promptCaching: 'none', source: OPENAI_CACHING_DOC },
  { ...OPENAI_CHAT, family: 'GPT-4o', match: /^gpt-4o(?:-mini)?(?:-\d{4}-\d{2}-\d{2})?$/, source: OPENAI_CACHING_DOC },

  // ---- Google. 2.5 Pro cannot turn thinking off.
  { ...GEMINI, family: 'Gemini 2.5 Pro', match: /^gemini-2\.5-pro(?:-preview(?:-[\w-]+)?|-\d{3})?$/, effort: ['low', 'medium', 'high'], source: GEMINI_THINKING_DOC },
  { ...GEMINI, family: 'Gemini 2.5 Flash / Flash-Lite', match: /^gemini-2\.5-flash(?:-lite)?(?:-preview(?:-[\w-]+)?|-\d{3})?$/, source: GEMINI_THINKING_DOC },
] satisfies ModelProfile[]);

/** Provider names that mean the same API (`openai.chat`, `openai.responses` → `openai`; `gemini` → `google`). */
export function canonicalProvider(provider: string): string {
  const base = provider.split('.')[0]!.toLowerCase();
  return base === 'gemini' || base === 'google-generative-ai' ? 'google' : base;
}

/**
 * The profile of a model, or undefined when Cairn does not know it.
 *
 * @example
 * modelProfile('openai', 'o3-mini')?.temperature // null: reasoning models refuse temperature
 */
export function modelProfile(provider: string, modelId: string): ModelProfile | undefined {
  const canonical = canonicalProvider(provider);
  // Google's REST ids may carry a `models/` prefix.
  const id = canonical === 'google' ? modelId.replace(/^models\//, '') : modelId;
  return MODEL_PROFILES.find((p) => p.provider === canonical && p.match.test(id));
}

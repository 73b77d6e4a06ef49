/**
 * The doctor's checks of the sampling and reasoning settings against each
 * model's profile: what a request to that model would be refused for. The
 * settings go to every model of the run (the fallbacks too), so each model is
 * checked; the shapes of the settings are checked once.
 */
import {
  canonicalProvider, EFFORT_LEVELS, MODEL_PROFILES, modelProfile, type ModelCapabilities,
} from '../models/profiles.js';
import type { Findings } from './doctor-codes.js';
import type { CheckedModel } from './doctor-models.js';
import { isRecord, show } from './doctor-tools.js';

const CAPABILITY_KEYS = ['temperature', 'topP', 'oneSampler', 'samplingOnlyAtEffort', 'effort', 'defaultEffort', 'promptCaching'] as const;

/** The settings as given, with whether each has a shape worth checking against a profile. */
export interface Settings {
  effort?: string;
  temperature?: number;
  topP?: number;
  promptCaching: boolean;
  /** The `capabilities` override, only its well-formed fields. */
  override: Partial<ModelCapabilities>;
}

/** The `capabilities` override, keeping only well-formed fields. */
function readCapabilities(value: unknown, out: Findings): Partial<ModelCapabilities> {
  if (value === undefined) return {};
  if (!isRecord(value)) {
    out.add('option-invalid', `Set capabilities to an object of model capabilities ({ temperature, topP, effort, ... }), got ${show(value)}.`, 'capabilities');
    return {};
  }
  const caps: Record<string, unknown> = {};
  const levels = (v: unknown) => Array.isArray(v) && v.every((e) => (EFFORT_LEVELS as readonly unknown[]).includes(e));
  const valid: Record<(typeof CAPABILITY_KEYS)[number], (v: unknown) => boolean> = {
    temperature: (v) => v === null || (isRecord(v) && typeof v.min === 'number' && typeof v.max === 'number' && v.min <= v.max),
    topP: (v) => typeof v === 'boolean',
    oneSampler: (v) => typeof v === 'boolean',
    samplingOnlyAtEffort: (v) => v === null || levels(v),
    effort: (v) => v === null || levels(v),
    defaultEffort: (v) => v === null || (EFFORT_LEVELS as readonly unknown[]).includes(v),
    promptCaching: (v) => v === 'explicit' || v === 'automatic' || v === 'none',
  };
  for (const [key, v] of Object.entries(value)) {
    const check = valid[key as keyof typeof valid];
    if (!check) out.add('option-unknown', `capabilities.${key} is not a capability Cairn knows (${CAPABILITY_KEYS.join(', ')}).`, `capabilities.${key}`);
    else if (v !== undefined && !check(v)) out.add('option-invalid', `capabilities.${key} has the wrong shape (${show(v)}); see ModelCapabilities.`, `capabilities.${key}`);
    else if (v !== undefined) caps[key] = v;
  }
  return caps as Partial<ModelCapabilities>;
}

/** Checks the settings' shapes (for every model alike) and returns the well-formed ones. */
export function readSettings(options: Record<string, unknown>, out: Findings): Settings {
  const { effort, temperature, topP, promptCaching } = options;
  const settings: Settings = { promptCaching: false, override: {} };
  if (effort !== undefined) {
    if ((EFFORT_LEVELS as readonly unknown[]).includes(effort)) settings.effort = effort as string;
    else out.add('option-invalid', `Set effort to one of ${EFFORT_LEVELS.join(', ')}, got ${show(effort)}.`, 'effort');
  }
  if (temperature !== undefined) {
    if (typeof temperature === 'number' && Number.isFinite(temperature)) settings.temperature = temperature;
    else out.add('option-invalid', `Set temperature to a number, got ${show(temperature)}.`, 'temperature');
  }
  if (topP !== undefined) {
    if (!(typeof topP === 'number' && Number.isFinite(topP))) out.add('option-invalid', `Set topP to a number in [0, 1], got ${show(topP)}.`, 'topP');
    else {
      if (topP < 0 || topP > 1) out.add('top-p-out-of-range', `Set topP within [0, 1], got ${topP}.`, 'topP');
      settings.topP = topP;
    }
  }
  if (promptCaching !== undefined && typeof promptCaching !== 'boolean' && !isRecord(promptCaching)) {
    out.add('option-invalid', `Set promptCaching to true or false, got ${show(promptCaching)}.`, 'promptCaching');
  }
  settings.promptCaching = promptCaching !== undefined && promptCaching !== false;
  settings.override = readCapabilities(options.capabilities, out);
  return settings;
}

/**
 * For a model Cairn has no profile for: what no model of its provider that
 * Cairn knows would take. Only a warning, since a new model may take it.
 */
function checkUnknown(checked: CheckedModel, provider: string, settings: Settings, out: Findings, at: (option: string) => string, lead: string): void {
  const family = MODEL_PROFILES.filter((p) => p.provider === provider);
  if (family.length === 0) return;
  const none = `${lead}${lead ? 'no' : 'No'} ${provider} model Cairn knows`;
  if (settings.effort !== undefined && !family.some((p) => p.effort?.includes(settings.effort as never))) {
    const levels = EFFORT_LEVELS.filter((level) => family.some((p) => p.effort?.includes(level)));
    out.add('effort-unsupported', `${none} takes effort '${settings.effort}' (they take ${levels.join(', ')}), so ${checked.modelId} most likely refuses it too. Use one of those, or pass capabilities if this model takes it.`, at('effort'), 'warning');
  }
  if (settings.temperature !== undefined) {
    const top = Math.max(...family.map((p) => p.temperature?.max ?? -Infinity));
    if (Number.isFinite(top) && (settings.temperature < 0 || settings.temperature > top)) {
      out.add('temperature-out-of-range', `${none} takes temperature ${settings.temperature} (the widest range is 0 to ${top}).`, at('temperature'), 'warning');
    }
  }
}

/** Checks the settings against one model's profile (and the `capabilities` override). */
export function checkProfile(checked: CheckedModel, settings: Settings, out: Findings): void {
  const provider = canonicalProvider(checked.provider);
  if (provider === 'mock') return; // the scripted model ignores request parameters
  const primary = checked.path === 'model';
  // A fallback's findings point at the fallback; the primary's at the option the model refuses.
  const at = (option: string) => (primary ? option : checked.path);
  const lead = primary ? '' : `${checked.path}: `;
  const profile = modelProfile(checked.provider, checked.modelId);
  // `capabilities` describes the run's own model, not its fallbacks.
  const override = primary ? settings.override : {};
  if (!profile && Object.keys(override).length === 0) {
    out.add('model-unknown', `${lead}Cairn has no profile for ${checked.provider}:${checked.modelId}, so sampling, effort and caching were not checked against it. Pass capabilities to describe the model.`, checked.path);
    checkUnknown(checked, provider, settings, out, at, lead);
    return;
  }
  const caps: Partial<ModelCapabilities> = { ...profile, ...override };
  const name = `${lead}${profile ? `${profile.family} (${checked.modelId})` : checked.modelId}`;
  const { effort, temperature, topP } = settings;

  if (effort !== undefined && caps.effort !== undefined) {
    if (caps.effort === null) {
      out.add('effort-unsupported', `${name} takes no effort parameter: remove effort.`, at('effort'));
    } else if (!caps.effort.includes(effort as never)) {
      out.add('effort-unsupported', `${name} does not accept effort '${effort}': use one of ${caps.effort.join(', ')}, or leave effort out.`, at('effort'));
    }
  }
  const effective = effort ?? caps.defaultEffort ?? undefined;
  const sampling: Array<['temperature' | 'topP', boolean]> = [['temperature', temperature !== undefined], ['topP', topP !== undefined]];
  for (const [param, given] of sampling) {
    if (!given) continue;
    const refused = param === 'temperature' ? caps.temperature === null : caps.topP === false;
    if (refused) {
      out.add('sampling-unsupported', `${name} refuses ${param}: remove it (the model samples at its own setting).`, at(param));
    } else if (caps.samplingOnlyAtEffort && !(effective !== undefined && caps.samplingOnlyAtEffort.includes(effective as never))) {
      out.add('sampling-unsupported', `${name} accepts ${param} only at effort ${caps.samplingOnlyAtEffort.join(' or ')}: remove ${param}, or set effort to '${caps.samplingOnlyAtEffort[0]}'.`, at(param));
    } else if (param === 'temperature' && caps.temperature) {
      const { min, max } = caps.temperature;
      if (temperature! < min || temperature! > max) {
        out.add('temperature-out-of-range', `${name} takes temperature from ${min} to ${max}, got ${String(temperature)}.`, at('temperature'));
      }
    }
  }
  if (caps.oneSampler && sampling.every(([, given]) => given) && caps.temperature !== null && caps.topP !== false) {
    out.add('sampling-conflict', `${name} takes temperature or topP, not both: remove one of them.`, at('topP'));
  }
  if (settings.promptCaching && caps.promptCaching === 'none') {
    out.add('prompt-caching-unsupported', `${name} does not cache prompts: promptCaching will have no effect; remove it or pick a model that caches.`, at('promptCaching'));
  }
}

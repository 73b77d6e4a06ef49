/**
 * Every finding code the doctor can report, with what it means. The codes are
 * stable: scripts may branch on them.
 */
import type { DoctorFinding, DoctorSeverity } from './types.js';

export const DOCTOR_CODES = [
  { code: 'options-invalid', severity: 'error', description: 'The options are not an object.' },
  { code: 'option-invalid', severity: 'error', description: 'An option has the wrong type or value (maxSteps, maxRetries, modelTimeoutMs, maxOutputTokens, providerOptions, fallbackModels, budget, effort, toolChoice, deps, env, ...).' },
  { code: 'option-unknown', severity: 'info', description: 'A top-level option neither the run nor the doctor knows: a typo?' },
  { code: 'option-legacy', severity: 'error', description: 'verifyStep, doneWhen or falseFinishGuard: legacy hooks the native engine refuses; use verify.' },
  { code: 'model-missing', severity: 'error', description: 'No model was given.' },
  { code: 'model-invalid', severity: 'error', description: "The model (or a fallbackModels entry) is neither a Cairn model ('cairn-model-1', provider, modelId, doGenerate) nor a Vercel AI SDK language model (v2, v3, v4 with doGenerate and doStream)." },
  { code: 'model-unknown', severity: 'info', description: "No profile for the model (or a fallback): its profile checks were skipped; only what no model of its provider takes is reported, as warnings." },
  { code: 'fallback-duplicate', severity: 'warning', description: 'A fallbackModels entry is the same provider:modelId as the model or an earlier fallback.' },
  { code: 'api-key-missing', severity: 'error', description: "A model's API key is missing: its keyStatus says none was passed and none of its variables is set, or (for a model without keyStatus) the provider's usual variable, or apiKeyEnv, is unset or empty." },
  { code: 'api-key-unchecked', severity: 'info', description: 'The model has no keyStatus and its provider has no known key variable; pass apiKeyEnv to have it checked.' },
  { code: 'provider-options-unused', severity: 'info', description: 'providerOptions has an entry for a provider that no model of the run is of: no adapter reads it.' },
  { code: 'node-version-unsupported', severity: 'error', description: 'This Node version is below what Cairn or the chosen store needs.' },
  { code: 'tools-invalid', severity: 'error', description: 'tools is not an object of tools by name.' },
  { code: 'tool-invalid', severity: 'error', description: 'A tool is not an object, or its description is not a string.' },
  { code: 'tool-name-invalid', severity: 'error', description: 'A tool name does not match /^[A-Za-z0-9_-]{1,64}$/.' },
  { code: 'tool-schema-invalid', severity: 'error', description: "A tool's parameters are missing or not a sound JSON Schema of an object." },
  { code: 'tool-execute-invalid', severity: 'error', description: "A tool's execute is set but is not a function." },
  { code: 'tool-needs-approval-invalid', severity: 'error', description: "A tool's needsApproval is neither a boolean nor a function." },
  { code: 'tool-replay-invalid', severity: 'error', description: "A tool's replay is neither 'idempotent' nor 'never'." },
  { code: 'tool-validator-missing', severity: 'error', description: 'A JSON Schema outputSchema or contextSchema has no validateResult / validateContext beside it.' },
  { code: 'skill-tool-collision', severity: 'error', description: 'With skills, a tool (or the output tool) takes the name load_skill or read_skill_resource.' },
  { code: 'skills-invalid', severity: 'error', description: 'skills is not a skill source, a directory path, or a list of them.' },
  { code: 'skills-dir-missing', severity: 'error', description: 'A skills directory does not exist or is not a directory.' },
  { code: 'output-invalid', severity: 'error', description: 'output is not an object.' },
  { code: 'output-schema-missing', severity: 'error', description: 'output has no schema.' },
  { code: 'output-schema-invalid', severity: 'error', description: "output's JSON Schema is not sound (an object schema in 'tool' mode)." },
  { code: 'output-validate-missing', severity: 'error', description: 'output has a raw JSON Schema and no validate function.' },
  { code: 'output-mode-invalid', severity: 'error', description: "output.mode is neither 'json' nor 'tool'." },
  { code: 'output-name-invalid', severity: 'error', description: 'output.name is not a valid tool name.' },
  { code: 'output-name-collision', severity: 'error', description: "In 'tool' mode, output.name is also the name of one of your tools." },
  { code: 'tool-choice-unknown-tool', severity: 'error', description: 'toolChoice names a tool the run does not have.' },
  { code: 'tool-choice-no-tools', severity: 'error', description: "toolChoice is 'required' but the run has no tools." },
  { code: 'unpriced-model', severity: 'warning', description: 'The price table has no price for the model: info without a USD budget, warning with one, error with unknownPrice: reject; info for a fallback.' },
  { code: 'price-provider-failed', severity: 'error', description: 'deps.priceProvider threw, or did not answer within 5 seconds (reported once).' },
  { code: 'sampling-unsupported', severity: 'error', description: 'temperature or topP was given to a model that refuses it (at this effort).' },
  { code: 'sampling-conflict', severity: 'error', description: 'temperature and topP were both given to a model that takes only one of them.' },
  { code: 'temperature-out-of-range', severity: 'error', description: "temperature is outside the model's range (a warning for an unknown model when it is outside every known model of its provider)." },
  { code: 'top-p-out-of-range', severity: 'error', description: 'topP is outside [0, 1].' },
  { code: 'effort-unsupported', severity: 'error', description: 'effort was given to a model without effort levels, or is not one of its levels (a warning for an unknown model when no model of its provider takes it).' },
  { code: 'prompt-caching-unsupported', severity: 'warning', description: 'promptCaching was asked of a model that does not cache prompts.' },
] as const satisfies ReadonlyArray<{ code: string; severity: DoctorSeverity; description: string }>;

export type DoctorCode = (typeof DOCTOR_CODES)[number]['code'];

/** Collects findings; the severity defaults to the code's usual one. */
export class Findings {
  readonly list: DoctorFinding[] = [];

  add(code: DoctorCode, message: string, path?: string, severity?: DoctorSeverity): void {
    const usual = DOCTOR_CODES.find((c) => c.code === code)!.severity;
    this.list.push({ severity: severity ?? usual, code, message, ...(path === undefined ? {} : { path }) });
  }
}

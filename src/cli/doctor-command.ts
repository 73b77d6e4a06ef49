/**
 * `cairn doctor`: the headless doctor over what `cairn run` with the same
 * flags would use (the model and its fallbacks, the call limits, the tools
 * module, skill folders, the SQLite store), without running anything and
 * without a network call. A missing key is the doctor's finding
 * (`api-key-missing`, exit 8), not a usage error as it is for `cairn run`.
 */
import { resolve } from 'node:path';
import { doctor, exitCodeFor, type DoctorOptions } from '../headless/index.js';
import { atMost, flag, parse, str, strs, type OptionSpecs } from './args.js';
import { printJson, storeLocation, type Io } from './context.js';
import { DOCTOR_HELP } from './help.js';
import { MODEL_OPTIONS, readModelFlags } from './model-flags.js';
import { buildModel, type ModelSource } from './model-spec.js';
import { loadToolsModule } from './tools-module.js';

const DOCTOR_OPTIONS = {
  ...MODEL_OPTIONS,
  tools: { type: 'string' },
  skills: { type: 'string', multiple: true },
  store: { type: 'string' },
  json: { type: 'boolean' },
} as const satisfies OptionSpecs;

export async function doctorCommand(argv: string[], io: Io): Promise<number> {
  const parsed = parse(argv, DOCTOR_OPTIONS);
  if (flag(parsed, 'help')) {
    io.stdout.write(DOCTOR_HELP);
    return 0;
  }
  atMost(parsed, 0, 'doctor');
  storeLocation(str(parsed, 'store'), io.cwd); // checks the flag; the doctor checks the store's kind
  const models = readModelFlags(parsed, io.cwd);
  const toolsPath = str(parsed, 'tools');
  const skills = strs(parsed, 'skills').map((dir) => resolve(io.cwd, dir));
  const options: DoctorOptions & Record<string, unknown> = { store: 'sqlite' };
  const build = (source: ModelSource) => buildModel(source, io.cwd);
  if (models.model !== undefined) options.model = build(models.model);
  if (models.fallbacks) options.fallbackModels = models.fallbacks.map(build);
  if (models.maxRetries !== undefined) options.maxRetries = models.maxRetries;
  if (models.modelTimeoutMs !== undefined) options.modelTimeoutMs = models.modelTimeoutMs;
  // For a model that does not say where its key comes from, the doctor looks under this name.
  if (models.model?.kind === 'provider' && models.model.apiKeyEnv) options.apiKeyEnv = models.model.apiKeyEnv;
  if (toolsPath !== undefined) options.tools = (await loadToolsModule(toolsPath, io.cwd)).tools;
  // A missing folder is the doctor's finding (skills-dir-missing), not a usage error.
  if (skills.length > 0) options.skills = skills;
  const report = await doctor(options);
  if (flag(parsed, 'json')) {
    printJson(io, report);
  } else {
    const lines = report.findings.map((f) => `${f.severity.padEnd(7)} ${f.code}${f.path ? ` (${f.path})` : ''}: ${f.message}`);
    const errors = report.findings.filter((f) => f.severity === 'error').length;
    if (models.model === undefined && report.findings.some((f) => f.code === 'model-missing')) {
      lines.push('(cairn run takes its model from --model <provider>:<model> or --model <file>: pass it here too.)');
    }
    if (report.findings.some((f) => f.code === 'api-key-missing')) {
      lines.push('(cairn reads API keys from the environment only: set the variable above before cairn run.)');
    }
    lines.push(errors > 0 ? `${errors} error(s): a run with this configuration would fail.` : 'No errors.');
    io.stdout.write(`${lines.join('\n')}\n`);
  }
  return exitCodeFor(report);
}

/**
 * `cairn doctor`: the headless doctor over what `cairn run` with the same
 * flags would use (the scripted model, the tools module, skill folders, the
 * SQLite store), without running anything.
 */
import { resolve } from 'node:path';
import { doctor, exitCodeFor, type DoctorOptions } from '../headless/index.js';
import { atMost, flag, parse, str, strs, type OptionSpecs } from './args.js';
import { printJson, storeLocation, type Io } from './context.js';
import { DOCTOR_HELP } from './help.js';
import { loadModelFile, scriptedModel } from './scripted-model.js';
import { loadToolsModule } from './tools-module.js';

const DOCTOR_OPTIONS = {
  model: { type: 'string' },
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
  const modelPath = str(parsed, 'model');
  const toolsPath = str(parsed, 'tools');
  const skills = strs(parsed, 'skills').map((dir) => resolve(io.cwd, dir));
  const options: DoctorOptions = { store: 'sqlite' };
  if (modelPath !== undefined) options.model = scriptedModel(loadModelFile(modelPath, io.cwd).script);
  if (toolsPath !== undefined) options.tools = (await loadToolsModule(toolsPath, io.cwd)).tools;
  // A missing folder is the doctor's finding (skills-dir-missing), not a usage error.
  if (skills.length > 0) options.skills = skills;
  const report = await doctor(options);
  if (flag(parsed, 'json')) {
    printJson(io, report);
  } else {
    const lines = report.findings.map((f) => `${f.severity.padEnd(7)} ${f.code}${f.path ? ` (${f.path})` : ''}: ${f.message}`);
    const errors = report.findings.filter((f) => f.severity === 'error').length;
    if (modelPath === undefined && report.findings.some((f) => f.code === 'model-missing')) {
      lines.push('(cairn run takes its model from --model <file>: pass it here too.)');
    }
    lines.push(errors > 0 ? `${errors} error(s): a run with this configuration would fail.` : 'No errors.');
    io.stdout.write(`${lines.join('\n')}\n`);
  }
  return exitCodeFor(report);
}

/**
 * `cairn check`: before an upgrade, which stored runs would resume under the
 * tools and model given? The store is opened read-only: nothing is written.
 */
import { existsSync } from 'node:fs';
import type { AgentTools, LanguageModel } from '../agent/types.js';
import { checkStoredRuns, type StoredRunCheck } from '../headless/check.js';
import { HEADLESS_EXIT_CODES } from '../headless/report.js';
import { atMost, flag, parse, str, UsageError, type OptionSpecs } from './args.js';
import { DEFAULT_STORE, openStoreReadOnly, printJson, storeLocation, type Io } from './context.js';
import { CHECK_HELP } from './help.js';
import { v3StoreOf } from '../v3/sqlite-read.js';
import { buildModel, parseModelArg } from './model-spec.js';
import { loadToolsModule } from './tools-module.js';

const CHECK_OPTIONS = {
  store: { type: 'string' },
  tools: { type: 'string' },
  model: { type: 'string' },
  json: { type: 'boolean' },
} as const satisfies OptionSpecs;

const PROBLEMS: Record<NonNullable<StoredRunCheck['problem']>, string> = {
  'binding-changed': 'binding changed',
  'version-unknown': 'machine version unknown to this Cairn',
  'record-corrupt': 'record corrupt',
  'replay-diverged': 'its history does not replay to its snapshot on these machines',
};

export async function checkCommand(argv: string[], io: Io): Promise<number> {
  const parsed = parse(argv, CHECK_OPTIONS);
  if (flag(parsed, 'help')) {
    io.stdout.write(CHECK_HELP);
    return 0;
  }
  atMost(parsed, 0, 'check');
  const given = str(parsed, 'store');
  const location = storeLocation(given, io.cwd);
  if (!existsSync(location.path)) throw new UsageError(`There is no store at ${given ?? DEFAULT_STORE}.`);
  const toolsPath = str(parsed, 'tools');
  const modelArg = str(parsed, 'model');
  // Everything the check compares against is read before the store is opened.
  const tools: AgentTools | undefined = toolsPath !== undefined ? (await loadToolsModule(toolsPath, io.cwd)).tools : undefined;
  const model: LanguageModel | undefined = modelArg !== undefined ? buildModel(parseModelArg('model', modelArg, io.cwd), io.cwd) : undefined;
  const ops = openStoreReadOnly(location, given);
  let checks: StoredRunCheck[];
  try {
    const agent = { ...(tools ? { tools } : {}), ...(model ? { model } : {}) };
    // The ops run store's runs, then the V3 store's in the same file.
    checks = [...await checkStoredRuns(ops.agentRuns, { agent }), ...await checkStoredRuns(v3StoreOf(ops), { agent })];
  } finally {
    ops.close();
  }
  const failing = checks.filter((c) => !c.resumes);
  if (flag(parsed, 'json')) {
    printJson(io, { compared: [...(tools ? ['tools'] : []), ...(model ? ['model'] : [])], runs: checks });
  } else {
    const compared = [tools ? `the tools of ${toolsPath}` : null, model ? `the model ${modelArg}` : null].filter(Boolean).join(' and ');
    io.stdout.write(`Checked ${checks.length} run(s) that can still go on${compared ? `, against ${compared}` : ' (records only: no --tools or --model given)'}.\n`);
    for (const c of checks) {
      if (c.resumes) {
        io.stdout.write(`  ok    ${c.runId} (${c.status}${c.storedVersion !== null ? `, machine v${c.storedVersion}` : ''})\n`);
      } else {
        io.stdout.write(`  FAIL  ${c.runId} (${c.status}): ${PROBLEMS[c.problem!]}\n`);
        for (const detail of c.details) io.stdout.write(`          ${detail}\n`);
      }
    }
    io.stdout.write(failing.length === 0 ? 'Every run would resume.\n' : `${failing.length} run(s) would not resume.\n`);
  }
  return failing.length === 0 ? 0 : HEADLESS_EXIT_CODES.doctorError;
}

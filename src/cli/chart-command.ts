/**
 * `cairn chart <runId>`: a stored run on its charts. HTML by default (renderRunChartHtml: the run
 * and tool-call machines laid out as diagrams, the run's states marked, the same charts as text
 * below); Mermaid or DOT text of the run chart and each open call's chart; or describeRun's JSON.
 * The store is opened read-only, like inspect: charting a run never writes it.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describeRun, renderRunChartHtml, runMachine, toDot, toMermaid, toolCallMachine, type RunDescription } from '../machines/index.js';
import { connectionOf } from '../stores/sqlite/index.js';
import { atMost, checkId, flag, parse, str, UsageError, type OptionSpecs } from './args.js';
import { openStoreReadOnly, storeLocation, type Io } from './context.js';
import type { AgentRunEnvelope } from '../agent/types.js';
import { storeHolding } from '../v3/sqlite-read.js';
import { readableRecord } from '../v3/store-read.js';
import { CHART_HELP } from './help.js';
import { readRunMeta } from './run-meta.js';

const CHART_OPTIONS = {
  store: { type: 'string' },
  out: { type: 'string' },
  open: { type: 'boolean' },
  format: { type: 'string' },
  call: { type: 'string' },
} as const satisfies OptionSpecs;

const FORMATS = ['html', 'mermaid', 'dot', 'json'] as const;
type Format = (typeof FORMATS)[number];

export async function chartCommand(argv: string[], io: Io): Promise<number> {
  const parsed = parse(argv, CHART_OPTIONS);
  if (flag(parsed, 'help')) {
    io.stdout.write(CHART_HELP);
    return 0;
  }
  atMost(parsed, 1, 'chart');
  const runId = parsed.positionals[0];
  if (runId === undefined) throw new UsageError('cairn chart needs the run id: cairn chart <runId>.');
  checkId('The run id', runId);
  const format = (str(parsed, 'format') ?? 'html') as Format;
  if (!FORMATS.includes(format)) throw new UsageError(`--format takes one of ${FORMATS.join(', ')}; got ${JSON.stringify(format)}.`);
  const out = str(parsed, 'out');
  if (out === '') throw new UsageError('--out must be a file path.');
  const callId = str(parsed, 'call');
  if (callId !== undefined) checkId('--call', callId);

  const given = str(parsed, 'store');
  const location = storeLocation(given, io.cwd);
  const ops = openStoreReadOnly(location, given);
  let text: string;
  try {
    // A run cairn started is read under the scope it recorded; one an application stored is read
    // as it is, since whoever holds the store file can read every run in it anyway.
    const scope = readRunMeta(connectionOf(ops), runId)?.scope;
    // With the revision that wrote each row, so the timeline says which save holds each turn and result.
    // The run is in the ops run store or in the V3 store of the same file (whose record is drawn as the run it is).
    const held = await storeHolding(ops, runId);
    const stored = held && await held.load(runId, scope === undefined ? { saves: true } : { scope, saves: true });
    if (stored === undefined) throw new UsageError(`There is no run ${runId} in ${given ?? 'the store'}.`);
    const envelope = readableRecord(held, stored) as AgentRunEnvelope;
    const run = describeRun(stored);
    if (callId !== undefined && !run.steps.some((s) => s.calls.some((c) => c.toolCallId === callId)) && !run.calls.some((c) => c.toolCallId === callId)) {
      throw new UsageError(`Run ${runId} has no call ${callId}.`);
    }
    text = format === 'html' ? renderRunChartHtml(envelope, callId === undefined ? {} : { callId })
      : format === 'json' ? `${JSON.stringify(run, null, 2)}\n`
      : chartText(run, format, callId);
  } finally {
    ops.close();
  }

  // --open without --out: the page goes to a file of its own, since a browser cannot open stdout.
  const target = out !== undefined ? resolve(io.cwd, out)
    : flag(parsed, 'open') ? join(tmpdir(), `cairn-chart-${runId}.${format === 'mermaid' ? 'mmd' : format}`)
    : undefined;
  if (target === undefined) {
    io.stdout.write(text);
    return 0;
  }
  writeFileSync(target, text);
  io.stderr.write(`wrote ${target}\n`);
  if (flag(parsed, 'open')) {
    const opened = await openFile(target);
    io.stderr.write(opened ? `opened it with ${opener()}\n` : `could not open it: no ${opener()} on this system; open ${target} yourself.\n`);
  }
  return 0;
}

/** Mermaid or DOT: the run chart at the run's states, then each open call's (and the selected call's) chart. */
function chartText(run: RunDescription, format: 'mermaid' | 'dot', callId: string | undefined): string {
  const draw = format === 'mermaid' ? toMermaid : toDot;
  const comment = format === 'mermaid' ? '%%' : '//';
  const charts = [`${comment} run ${run.runId}: ${run.status}, states ${run.states.join(', ')}\n${draw(runMachine, { highlight: run.states })}`];
  const calls: { toolCallId: string; toolName: string; modelStep: number; states: string[]; stage: string | null }[] = [...run.calls];
  if (callId !== undefined && !calls.some((c) => c.toolCallId === callId)) {
    const ended = run.steps.flatMap((s) => s.calls.map((c) => ({ ...c, modelStep: s.step }))).filter((c) => c.toolCallId === callId).at(-1)!;
    calls.push({ ...ended, states: [], stage: null });
  }
  for (const call of calls) {
    const where = call.stage === null ? 'ended, no chart state kept' : `stage ${call.stage}, states ${call.states.join(', ')}`;
    charts.push(`${comment} call ${call.toolCallId} (${call.toolName}, step ${call.modelStep}): ${where}\n${draw(toolCallMachine, { highlight: call.states })}`);
  }
  return charts.join('\n');
}

const opener = (): string => (process.platform === 'darwin' ? 'open' : 'xdg-open');

/** Starts the desktop's opener on `path` and leaves it running; false when there is none. */
function openFile(path: string): Promise<boolean> {
  return new Promise((done) => {
    const child = spawn(opener(), [path], { detached: true, stdio: 'ignore' });
    child.once('error', () => done(false));
    child.once('spawn', () => {
      child.unref();
      done(true);
    });
  });
}

/**
 * Writes the handoff records of the compatibility corpus: runs handed from
 * triage to billing, as the engine of one run-machine version stores them,
 * in <out>/handoff-v<N>/. Run it once per machine version, from the engine
 * commit of that version (see generate-corpus.ts for the worktree steps),
 * with this file, handoff-agent.ts and corpus-agent.ts copied in:
 *
 *   npx tsx --conditions=source test/compat/generate-handoff.ts --out <this repo>/test/compat/corpus
 *
 * It refuses to write into a folder that exists: these files are never
 * regenerated or edited. Clock and ids are fixed, so two runs on one commit
 * write the same bytes.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInMemoryAgentRunStore, runAgent } from 'cairn/agent';
import { RUN_MACHINE_VERSION } from '../../machines/index.js';
import { handoffLeg, HANDOFF_SCOPE, TURNS } from './handoff-agent.js';

const out = process.argv[process.argv.indexOf('--out') + 1];
if (!out || process.argv.indexOf('--out') < 0) throw new Error('usage: generate-handoff.ts --out <corpus folder>');
const folder = resolve(out, `handoff-v${RUN_MACHINE_VERSION}`);
if (existsSync(folder)) throw new Error(`${folder} exists: corpus files are never regenerated.`);
mkdirSync(folder, { recursive: true });

const cases = {
  // billing's first model call failed for a transient cause: the record is the handoff's checkpoint, with billing active.
  'failed-after-handoff': { triage: [TURNS.transfer], billing: [TURNS.down], status: 'failed' },
  // billing looked the order up and waits for the refund's approval.
  'suspended-approval': { triage: [TURNS.transfer], billing: [TURNS.lookup, TURNS.refund], status: 'suspended' },
  completed: { triage: [TURNS.transfer], billing: [TURNS.lookup, TURNS.done], status: 'completed' },
} as const;

for (const [name, c] of Object.entries(cases)) {
  const store = createInMemoryAgentRunStore();
  const runId = `corpus-handoff-${name}`;
  const result = await runAgent(handoffLeg({ effects: { refunds: [], lookups: [] }, runId, store, triage: [...c.triage], billing: [...c.billing] }));
  if (result.status !== c.status) throw new Error(`${name}: the run ended ${result.status}, not ${c.status}`);
  const envelope = await store.load(runId, { scope: HANDOFF_SCOPE });
  writeFileSync(join(folder, `${name}.json`), `${JSON.stringify(envelope, null, 2)}\n`);
}
console.log(`wrote ${Object.keys(cases).length} records to ${folder}`);

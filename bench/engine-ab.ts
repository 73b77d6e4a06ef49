/**
 * The engine of this checkout against the one of another (an earlier commit,
 * for a before/after), in one process, their loops alternating, so both are
 * measured under the same load (not part of `npm run bench`). Two bench runs
 * a few minutes apart on these shared machines differ by 20-30% in the
 * engine's own figure; alternating in one process, a change of a few percent
 * shows.
 *
 * Each round, on each side: one 100-step tool loop (bench/tool-loop.ts, the
 * bare scripted model) with no session, and one with a session whose store
 * keeps nothing (every envelope built, none copied or written). Process CPU
 * time per step; medians over the rounds, and the session's own cost (the
 * second less the first).
 *
 *   CAIRN_AB_OTHER=/path/to/other/checkout npx tsx --conditions=source bench/engine-ab.ts [rounds]
 *
 * The other checkout needs its dependencies (a node_modules of its own, or a
 * link to this one's).
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AgentRunStore } from 'cairn/agent';
import { cpuPerStep, discard, median } from './engine.js';

type ToolLoop = (store: AgentRunStore | null, runId: string, steps: number, model: 'bare') => Promise<{ status: string }>;

const STEPS = 100;
const WARMUP = 40;
const rounds = Number(process.argv[2] ?? 31);
const other = process.env.CAIRN_AB_OTHER;
if (!other) {
  console.error('Set CAIRN_AB_OTHER to the other checkout.');
  process.exit(2);
}


async function side(label: string, root: string) {
  const { toolLoop } = await import(pathToFileURL(join(root, 'bench', 'tool-loop.ts')).href) as { toolLoop: ToolLoop };
  let n = 0;
  const loop = async (store: AgentRunStore | null) => {
    const result = await toolLoop(store, `ab-${label}-${n++}`, STEPS, 'bare');
    if (result.status !== 'completed') throw new Error(`${label}: the loop ended ${result.status}`);
  };
  const cpu = (store: AgentRunStore | null) => cpuPerStep(() => loop(store), STEPS);
  return { label, loop, cpu, none: [] as number[], session: [] as number[] };
}

const sides = [await side('this checkout', resolve('.')), await side(`other (${other})`, resolve(other))];
for (const s of sides) for (let i = 0; i < WARMUP; i++) {
  await s.loop(null);
  await s.loop(discard);
}
for (let round = 0; round < rounds; round++) {
  for (const s of round % 2 ? [...sides].reverse() : sides) {
    s.none.push(await s.cpu(null));
    s.session.push(await s.cpu(discard));
  }
}
console.log(`\nEngine A/B: CPU µs per step of a ${STEPS}-step tool loop, medians of ${rounds} alternating rounds\n`);
console.log('| checkout | no session | session, store keeps nothing | what the session adds |');
console.log('| --- | ---: | ---: | ---: |');
for (const s of sides) {
  console.log(`| ${s.label} | ${median(s.none).toFixed(0)} | ${median(s.session).toFixed(0)} | ${(median(s.session) - median(s.none)).toFixed(0)} |`);
}

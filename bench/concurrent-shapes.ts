/**
 * Where the concurrency section's CPU per commit comes from (not part of
 * `npm run bench`): drives loops on PostgreSQL in several shapes, P processes
 * of R runs at once each (`cairn:4x4` is the section's own 16 runs, `1x1` one
 * run alone, `1x4` four runs in one process, `4x1` four processes of one run),
 * as bench/concurrent.ts does (same workers, warm-up and start signal), the
 * shapes alternating for `REPS` rounds, and prints for each drive the commit
 * rate, the workers' CPU per commit (process.cpuUsage) and their database
 * backends' (from /proc), then the medians, and how many of the run rows'
 * updates were heap-only (pg_stat_user_tables).
 *
 * A kind is `cairn`, `snapshot` or `append` (the bare XState loops of
 * bench/concurrent-baseline.ts); `cairn@45` first sets the runs table's
 * fillfactor to 45. A drive of one run alone takes 3x the steps, so that the
 * backends' CPU (read in 10 ms ticks) is counted over enough commits.
 *
 *   SHAPES=cairn:1x1,cairn:1x4,cairn:4x1,cairn:4x4 REPS=3 \
 *     npx tsx --conditions=source bench/concurrent-shapes.ts
 */
import { loadavg } from 'node:os';
import pg from 'pg';
import { drive, postgresTargets, postgresTask, tasks } from './concurrent.js';
import { POSTGRES_URL } from './resume.js';

const shapes = (process.env.SHAPES ?? 'cairn:4x4,cairn:1x4,cairn:4x1,cairn:1x1,append:4x4,append:1x1').split(',');
const reps = Number(process.env.REPS ?? 3);
const STEPS = 100;

interface Shape {
  label: string;
  kind: 'cairn' | 'snapshot' | 'append';
  fillfactor: number | null;
  processes: number;
  runs: number;
}

function parse(label: string): Shape {
  const match = /^(cairn|snapshot|append)(?:@(\d+))?:(\d+)x(\d+)$/.exec(label);
  if (!match) throw new Error(`concurrent-shapes: a shape is kind[@fillfactor]:PxR, got ${label}`);
  return { label, kind: match[1] as Shape['kind'], fillfactor: match[2] ? Number(match[2]) : null, processes: Number(match[3]), runs: Number(match[4]) };
}

const admin = new pg.Client({ connectionString: POSTGRES_URL });
await admin.connect();
const t = await postgresTargets(POSTGRES_URL, admin);
const figures = new Map<string, { worker: number[]; backend: number[]; rate: number[] }>();
try {
  for (let round = 0; round < reps; round++) {
    for (const shape of shapes.map(parse)) {
      if (shape.kind === 'cairn') await admin.query(`ALTER TABLE "${t.schema}".cairn_runs SET (fillfactor = ${shape.fillfactor ?? 100})`);
      const alone = shape.processes === 1 && shape.runs === 1;
      const o = await drive(tasks(shape.processes, { ...postgresTask(t, shape.kind), runs: shape.runs, steps: alone ? 3 * STEPS : STEPS }), admin);
      const worker = o.cpuMs / o.commits;
      const backend = o.serverCpuMs === null ? Number.NaN : o.serverCpuMs / o.commits;
      const rate = (o.commits * 1000) / o.wallMs;
      const f = figures.get(shape.label) ?? { worker: [], backend: [], rate: [] };
      f.worker.push(worker);
      f.backend.push(backend);
      f.rate.push(rate);
      figures.set(shape.label, f);
      console.log(
        `${shape.label} round ${round + 1}: ${o.commits} commits, ${rate.toFixed(0)}/s, CPU ms per commit: workers ${worker.toFixed(3)}, ` +
        `backends ${backend.toFixed(3)} (load ${o.load.toFixed(2)})`,
      );
    }
  }
  const { rows } = await admin.query<{ n_tup_upd: string; n_tup_hot_upd: string; n_dead_tup: string; size: string }>(
    `SELECT n_tup_upd, n_tup_hot_upd, n_dead_tup, pg_total_relation_size(relid) AS size FROM pg_stat_user_tables
     WHERE schemaname = $1 AND relname = 'cairn_runs'`, [t.schema]);
  const runs = rows[0];
  if (runs && Number(runs.n_tup_upd) > 0) {
    console.log(
      `\ncairn_runs (every cairn drive): ${runs.n_tup_upd} updates, ${runs.n_tup_hot_upd} heap-only ` +
      `(${((100 * Number(runs.n_tup_hot_upd)) / Number(runs.n_tup_upd)).toFixed(1)}%), ${runs.n_dead_tup} dead row versions, ${runs.size} B`,
    );
  }
} finally {
  await t.drop();
  await admin.end();
}
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
console.log(`\n| shape | commits/s | CPU ms per commit: workers | backends | (medians of ${reps}) |`);
console.log('| --- | ---: | ---: | ---: | --- |');
for (const [label, f] of figures) console.log(`| ${label} | ${median(f.rate).toFixed(0)} | ${median(f.worker).toFixed(3)} | ${median(f.backend).toFixed(3)} | |`);
console.log(`\nload average at the end ${loadavg()[0]!.toFixed(2)}`);

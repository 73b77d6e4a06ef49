/**
 * Where the workers of the concurrency section spend their CPU (not part of
 * `npm run bench`): drives one kind of loop as bench/concurrent.ts does (16
 * runs from 4 forked processes, same warm-up and start signal), with each
 * worker sampling its CPU over the timed part (every 100 µs), and prints the
 * time per commit by area (XState, the pg driver, the socket, msgpackr, the
 * stores, the engine, ...), the top functions by self time, and Cairn's own
 * functions by inclusive time.
 *
 * A sampling profiler charges a function for the time its process was off
 * the CPU too (other workers, the database and other users of the machine
 * run on the same cores), so the sampled total exceeds the CPU the workers
 * used. On PostgreSQL the figures are scaled to the measured CPU per commit
 * (process.cpuUsage of the workers), which the sampling itself raises (by
 * about 1.5x to 2x at this rate): read them as shares, and take the CPU per
 * commit from `npm run bench -- --concurrent`, which does not profile. On
 * SQLite they are not scaled: a better-sqlite3 call blocks the JS thread
 * while it waits for the file's write lock and for the fsync, and the
 * profiler charges that wait to the call (`run`), so there the figures are
 * the thread's wall time per commit.
 *
 *   npx tsx --conditions=source bench/concurrent-profile.ts [postgres|sqlite] [cairn|snapshot|append] [top]
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { CpuProfile } from './engine.js';
import { drive, postgresTargets, postgresTask, PROCESSES, sqliteTargets, sqliteTask, tasks, type Outcome } from './concurrent.js';
import { POSTGRES_URL } from './resume.js';

const store = process.argv[2] === 'sqlite' ? 'sqlite' : 'postgres';
const kind = (['cairn', 'snapshot', 'append'] as const).find((k) => k === process.argv[3]) ?? 'cairn';
const TOP = Number(process.argv[4] ?? 30);

type Node = CpuProfile['nodes'][number];

/** The area a sampled function belongs to. */
function area(node: Node, file: string): string {
  const fn = node.callFrame.functionName;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1];
  if (pkg === 'xstate') return 'XState interpreter';
  if (pkg && /^(pg|pg-protocol|pg-pool|pg-types|postgres-.*)$/.test(pkg)) return 'pg driver (JS)';
  if (pkg === 'better-sqlite3') return 'better-sqlite3 (JS side)';
  if (pkg === 'msgpackr') return 'msgpackr';
  if (pkg) return pkg;
  if (fn === 'writev' || fn === 'writeBuffer' || fn === 'writeUtf8String' || /^node:(net|stream|events|internal\/stream)/.test(file)) return 'socket and streams (node)';
  if (/^node:internal\/crypto/.test(file) || fn === 'oneShotDigest') return 'sha256 (node:crypto)';
  if (/^node:(buffer|internal\/buffer)/.test(file)) return 'Buffer allocation and copies';
  if (/^src\/agent\/json\.ts/.test(file)) return 'src/agent/json.ts (toJson)';
  if (/^src\/stores\//.test(file)) return 'src/stores (planner, record, codec, digest, store)';
  if (/^(src|machines)\//.test(file)) return 'engine (src/runtime, src/agent, machines)';
  if (/^bench\//.test(file)) return 'bench (the scripted model and tool, the baseline)';
  if (fn === '(garbage collector)') return 'garbage collector';
  if (fn === 'runMicrotasks' || /task_queues|promises|async_hooks|timers|fixed_queue|abort_controller|priority_queue/.test(file)) {
    return 'promises, ticks, timers, AbortSignal';
  }
  if (fn === '(program)') return '(program: V8 and native, unattributed)';
  return `other (${file || fn})`;
}

interface Tally {
  sampledMs: number;
  areas: Map<string, number>;
  self: Map<string, number>;
  inclusive: Map<string, number>;
}

function tally(files: string[]): Tally {
  const t: Tally = { sampledMs: 0, areas: new Map(), self: new Map(), inclusive: new Map() };
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  for (const path of files) {
    const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const fileOf = (n: Node) => n.callFrame.url.replace(/^file:\/\//, '').replace(`${process.cwd()}/`, '');
    const key = (n: Node) => {
      const file = fileOf(n).replace(/.*node_modules\//, '');
      const where = n.callFrame.lineNumber > 0 ? `${file}:${n.callFrame.lineNumber + 1}` : file;
      return `${where ? `${where} ` : ''}${n.callFrame.functionName || '(anonymous)'}`;
    };
    const samples = profile.samples ?? [];
    const deltas = profile.timeDeltas ?? [];
    for (let i = 0; i < samples.length; i++) {
      const node = byId.get(samples[i]!);
      if (!node || node.callFrame.functionName === '(idle)') continue;
      const ms = (deltas[i + 1] ?? deltas[i] ?? 0) / 1000;
      t.sampledMs += ms;
      add(t.self, key(node), ms);
      add(t.areas, area(node, fileOf(node)), ms);
      // Inclusive: once per function on the stack (recursion counted once).
      const seen = new Set<string>();
      for (let n: Node | undefined = node; n; n = parent.has(n.id) ? byId.get(parent.get(n.id)!) : undefined) {
        const k = key(n);
        if (!seen.has(k)) {
          seen.add(k);
          add(t.inclusive, k, ms);
        }
      }
    }
  }
  return t;
}

const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-conc-prof-'));
process.env.CAIRN_BENCH_CONCURRENT_PROFILE = dir;
let outcome: Outcome;
try {
  if (store === 'postgres') {
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    try {
      const t = await postgresTargets(POSTGRES_URL, admin);
      try {
        outcome = await drive(tasks(PROCESSES, postgresTask(t, kind)), admin);
      } finally {
        await t.drop();
      }
    } finally {
      await admin.end();
    }
  } else {
    outcome = await drive(tasks(PROCESSES, sqliteTask(sqliteTargets(dir), kind)));
  }
  const t = tally(readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(dir, f)));
  const { commits } = outcome;
  const measured = outcome.cpuMs / commits;
  const scale = store === 'postgres' ? measured / (t.sampledMs / commits) : 1;
  const us = (ms: number) => ((ms / commits) * scale * 1000).toFixed(1);
  const share = (ms: number) => `${((100 * ms) / t.sampledMs).toFixed(1)}%`;
  const label = kind === 'cairn' ? 'Cairn' : `bare XState, ${kind}`;
  console.log(
    `\n${label} on ${store}: ${outcome.steps} steps, ${commits} commits from ${PROCESSES} processes in ${(outcome.wallMs / 1000).toFixed(2)} s ` +
    `(load ${loadavg()[0]!.toFixed(2)} at the end, ${outcome.load.toFixed(2)} at go); workers' CPU ${measured.toFixed(3)} ms per commit` +
    `${outcome.serverCpuMs === null ? '' : `, database backends' ${(outcome.serverCpuMs / commits).toFixed(3)} ms per commit`}; ` +
    `sampled ${(t.sampledMs / commits).toFixed(3)} ms per commit${store === 'postgres' ? `, scaled by ${scale.toFixed(2)} below` : ' (wall time of the JS thread, not scaled)'}\n`,
  );
  console.log('| area (self time) | µs per commit | share |');
  console.log('| --- | ---: | ---: |');
  for (const [k, v] of [...t.areas].sort((a, b) => b[1] - a[1]).slice(0, 16)) console.log(`| ${k} | ${us(v)} | ${share(v)} |`);
  console.log(`\n| function (self time) | µs per commit | share |`);
  console.log('| --- | ---: | ---: |');
  for (const [k, v] of [...t.self].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`| ${k} | ${us(v)} | ${share(v)} |`);
  const own = [...t.inclusive].filter(([k]) => /^(src|machines|bench)\//.test(k) || /pg\/lib\/(client|query)\.js/.test(k));
  console.log(`\n| Cairn's and the driver's functions (inclusive time) | µs per commit | share |`);
  console.log('| --- | ---: | ---: |');
  for (const [k, v] of own.sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`| ${k} | ${us(v)} | ${share(v)} |`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

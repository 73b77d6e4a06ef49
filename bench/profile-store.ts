/**
 * Where a durable step's time goes on a store (not part of `npm run bench`):
 * samples the CPU while 100-step tool loops run on SQLite (synchronous=FULL)
 * or PostgreSQL, and prints the functions with the most self time per step.
 * Time in the fsync or on the wire shows as `(idle)` or `(program)`.
 *
 *   npx tsx --conditions=source bench/profile-store.ts [sqlite|postgres] [loops]
 */
import { Session } from 'node:inspector/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { AgentRunStore } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import { toolLoop } from './tool-loop.js';
import { selfTimes, type CpuProfile } from './engine.js';

const which = process.argv[2] ?? 'sqlite';
const loops = Number(process.argv[3] ?? 10);
const STEPS = 100;

let store: AgentRunStore;
let close: () => Promise<void>;
if (which === 'postgres') {
  const url = process.env.CAIRN_TEST_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/test';
  const schema = `cairn_profile_${process.pid}`;
  const ops = createPostgresOpsStore({ connectionString: url }, { schema });
  await ops.setup();
  store = ops.agentRuns;
  close = async () => {
    await ops.close();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  };
} else {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-profile-'));
  const ops = createSqliteOpsStore({ path: join(dir, 'p.sqlite'), synchronous: 'full' });
  store = ops.agentRuns;
  close = async () => {
    ops.close();
    rmSync(dir, { recursive: true, force: true });
  };
}

for (let i = 0; i < 3; i++) await toolLoop(store, `warm-${i}`, STEPS, 'bare');
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 50 });
await session.post('Profiler.start');
const started = performance.now();
for (let i = 0; i < loops; i++) await toolLoop(store, `timed-${i}`, STEPS, 'bare');
const ms = performance.now() - started;
const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile };
session.disconnect();
const self = selfTimes(profile);
const steps = loops * STEPS;
console.log(`${which}: ${((ms * 1000) / steps).toFixed(0)} µs per step over ${loops} loops of ${STEPS} steps\n`);
console.log('| function | µs/step |');
console.log('| --- | ---: |');
for (const [key, value] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log(`| ${key} | ${(value / steps).toFixed(1)} |`);
await close();

/**
 * A quick profile of the durable loop (not part of `npm run bench`): ms per
 * step of a tool loop without a session, on the in-memory store and on SQLite.
 * `npx tsx --conditions=source bench/profile-loop.ts [steps]`
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInMemoryAgentRunStore, type AgentRunStore } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { toolLoop } from './tool-loop.js';

const steps = Number(process.argv[2] ?? 100);


async function time(label: string, make: () => AgentRunStore | null) {
  for (let i = 0; i < 3; i++) {
    const store = make();
    const t = performance.now();
    const r = await toolLoop(store, `p-${label}-${i}`, steps);
    const ms = performance.now() - t;
    if (r.status !== 'completed') throw new Error(r.status);
    console.log(`${label}: ${(ms / steps).toFixed(3)} ms/step`);
  }
}

const dir = mkdtempSync(join(tmpdir(), 'cairn-profile-'));
await time('engine', () => null);
await time('in-memory', () => createInMemoryAgentRunStore());
const ops = createSqliteOpsStore({ path: join(dir, 'p.sqlite') });
await time('sqlite', () => ops.agentRuns);
ops.close();
rmSync(dir, { recursive: true, force: true });

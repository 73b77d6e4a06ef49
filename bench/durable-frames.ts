/**
 * What a durable SQLite commit writes to the log, counted rather than timed
 * (issue 16): WAL frames per commit of the bench's 100-step tool loop, and
 * which table or index owns each frame's page. Counts do not move with the
 * machine's load, so a change to the store's rows is measured by them.
 *
 * The store is a fresh file (Cairn's page size), warmed with `WARM` earlier
 * runs of the same loop under other run ids (so the measured run's rows land
 * among other runs' rows, as they do in a file in use); then automatic
 * checkpoints are turned off on the store's connection, the log emptied, and
 * the measured loop run. Its commits are every frame the log grew by.
 *
 *   npx tsx --conditions=source bench/durable-frames.ts [steps]
 */
import { closeSync, mkdtempSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentRunStore } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { connectionOf } from '../src/stores/sqlite/index.js';
import { toolLoop } from './tool-loop.js';

const WAL_HEADER = 32;
const FRAME_HEADER = 24;
const WARM = 8;

export interface FrameCount {
  commits: number;
  frames: number;
  framesPerCommit: number;
  walBytesPerStep: number;
  byOwner: { owner: string; perCommit: number }[];
}

/** Runs the loop of `steps` steps on a fresh SQLite store and counts the frames its commits wrote. */
export async function countDurableFrames(steps = 100): Promise<FrameCount> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-frames-'));
  const path = join(dir, 'runs.sqlite');
  const ops = createSqliteOpsStore({ path });
  try {
    for (let i = 0; i < WARM; i++) await toolLoop(ops.agentRuns, `warm-${(i * 7919) % 1000}`, steps, 'bare');
    const db = connectionOf(ops);
    db.pragma('wal_autocheckpoint = 0');
    db.pragma('wal_checkpoint(TRUNCATE)');
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const before = statSync(`${path}-wal`).size;
    // Each commit's frames are named by the table or index that owns the page right after that commit (dbstat reads
    // through the log): a page's owner at the end of the loop may be another (a freed page taken by a new row).
    const counts = new Map<string, number>();
    let at = WAL_HEADER;
    let commits = 0;
    let frames = 0;
    const header = Buffer.alloc(FRAME_HEADER);
    const name = () => {
      const owner = new Map<number, string>();
      for (const row of db.prepare<[], { name: string; pageno: number; pagetype: string }>('SELECT name, pageno, pagetype FROM dbstat').all()) {
        owner.set(row.pageno, `${row.name} (${row.pagetype})`);
      }
      const size = statSync(`${path}-wal`).size;
      const fd = openSync(`${path}-wal`, 'r');
      try {
        for (; at + FRAME_HEADER + pageSize <= size; at += FRAME_HEADER + pageSize) {
          readSync(fd, header, 0, FRAME_HEADER, at);
          const page = header.readUInt32BE(0);
          const key = page === 1 ? 'page 1' : owner.get(page) ?? 'free list';
          counts.set(key, (counts.get(key) ?? 0) + 1);
          frames++;
          if (header.readUInt32BE(4) !== 0) commits++;
        }
      } finally {
        closeSync(fd);
      }
    };
    const store: AgentRunStore = {
      load: (runId, options) => ops.agentRuns.load(runId, options),
      async save(envelope, options) {
        await ops.agentRuns.save(envelope, options);
        name();
      },
    };
    await toolLoop(store, 'measured-run', steps, 'bare');
    const size = statSync(`${path}-wal`).size;
    return {
      commits, frames, framesPerCommit: frames / commits, walBytesPerStep: (size - before) / steps,
      byOwner: [...counts].sort((a, b) => b[1] - a[1]).map(([name, n]) => ({ owner: name, perCommit: n / commits })),
    };
  } finally {
    ops.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const steps = Number(process.argv[2] ?? 100);
  const count = await countDurableFrames(steps);
  console.log(`SQLite durable loop, ${steps} steps: ${count.commits} commits, ${count.frames} frames, `
    + `${count.framesPerCommit.toFixed(2)} frames a commit, ${Math.round(count.walBytesPerStep)} B of WAL a step`);
  for (const { owner, perCommit } of count.byOwner) console.log(`  ${perCommit.toFixed(2)}  ${owner}`);
}

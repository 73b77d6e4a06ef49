/**
 * The write-amplification section of `npm run bench` (issue 16): the bytes a
 * durable tool step makes the database write to its log, against the bytes of
 * what the step adds to the run (its turn message, its tool result message and
 * its receipt, as JSON).
 *
 * SQLite: a 100-step tool loop on a store of its own, after one untimed loop,
 * with the store connection's automatic checkpoints off and the WAL emptied
 * (`wal_checkpoint(TRUNCATE)`) first, so the -wal file only grows: its growth
 * over the loop is every frame the loop's commits wrote. The frames are then
 * read back from the file (page number, commit marker) and each page is named
 * by the table or index that owns it (the dbstat table), which says what a
 * step's frames are made of.
 *
 * PostgreSQL: the same loop on a fresh schema, the WAL position
 * (pg_current_wal_lsn) and pg_stat_wal's counters read before and after, for
 * the first 100 steps after a CHECKPOINT (each page's first change after it
 * logs a full-page image) and for the next 100 (a second run right after).
 * Both are cluster-wide: a write by another session in the same moment counts
 * too, so the section prints how many other sessions were active.
 *
 *   npm run bench -- --wal      this section alone (or CAIRN_BENCH=wal)
 */
import { closeSync, mkdtempSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { AgentRunEnvelope, AgentRunStore } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import { connectionOf } from '../src/stores/sqlite/index.js';
import { toolLoop } from './tool-loop.js';
import { POSTGRES_URL } from './resume.js';

const STEPS = 100;
const TARGET_RATIO = 3;
const WAL_HEADER = 32;
const FRAME_HEADER = 24;

/** JSON bytes of what the run's steps added: every message after the prompt, and every receipt. Per step. */
function stepDataBytes(envelope: AgentRunEnvelope): { perStep: number; messages: number; receipts: number } {
  const context = (envelope.snapshot as { context: { messages: { role: string }[] } }).context;
  const added = context.messages.filter((m) => m.role !== 'system' && m.role !== 'user');
  const messages = added.reduce((n, m) => n + Buffer.byteLength(JSON.stringify(m)), 0);
  const receipts = Object.values(envelope.receipts).reduce((n, r) => n + Buffer.byteLength(JSON.stringify(r)), 0);
  return { perStep: (messages + receipts) / STEPS, messages: messages / STEPS, receipts: receipts / STEPS };
}

/** Counts the saves and the bytes the store said each one wrote (head and rows, encoded). */
function countingStore(inner: AgentRunStore & { readonly lastSaveBytes?: number }) {
  let saves = 0;
  let bytes = 0;
  const store: AgentRunStore = {
    load: (runId, options) => inner.load(runId, options),
    async save(envelope, options) {
      await inner.save(envelope, options);
      saves++;
      bytes += inner.lastSaveBytes ?? 0;
    },
  };
  return { store, saves: () => saves, bytes: () => bytes };
}

/** Every frame of a WAL file: the page it holds and whether it ends a commit. */
function readFrames(path: string, pageSize: number): { page: number; commit: boolean }[] {
  const size = statSync(path).size;
  const fd = openSync(path, 'r');
  const frames: { page: number; commit: boolean }[] = [];
  const header = Buffer.alloc(FRAME_HEADER);
  try {
    for (let at = WAL_HEADER; at + FRAME_HEADER + pageSize <= size; at += FRAME_HEADER + pageSize) {
      readSync(fd, header, 0, FRAME_HEADER, at);
      frames.push({ page: header.readUInt32BE(0), commit: header.readUInt32BE(4) !== 0 });
    }
  } finally {
    closeSync(fd);
  }
  return frames;
}

export interface SqliteWal {
  walBytesPerStep: number;
  framesPerStep: number;
  commitsPerStep: number;
  pageSize: number;
  savedBytesPerStep: number;
  data: ReturnType<typeof stepDataBytes>;
  /** Frames per step by the table or index (and page type) that owns the page. */
  byOwner: { owner: string; framesPerStep: number }[];
}

export interface PostgresWal {
  label: string;
  walBytesPerStep: number;
  recordsPerStep: number | null;
  fullPageImagesPerStep: number | null;
  commitsPerStep: number;
  data: ReturnType<typeof stepDataBytes>;
}

async function measureSqlite(): Promise<SqliteWal> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-wal-'));
  try {
    const path = join(dir, 'wal.sqlite');
    const ops = createSqliteOpsStore({ path, synchronous: 'full' });
    const db = connectionOf(ops);
    const warm = await toolLoop(ops.agentRuns, 'wal-warmup', STEPS);
    if (warm.status !== 'completed') throw new Error(`wal: the warm-up loop ended ${warm.status}`);
    db.pragma('wal_autocheckpoint = 0');
    db.pragma('wal_checkpoint(TRUNCATE)');
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const before = statSync(`${path}-wal`).size;
    const counted = countingStore(ops.agentRuns);
    const result = await toolLoop(counted.store, 'wal-measured', STEPS);
    if (result.status !== 'completed') throw new Error(`wal: the loop ended ${result.status}`);
    const grown = statSync(`${path}-wal`).size - before;
    const frames = readFrames(`${path}-wal`, pageSize);
    // Who owns each page now (dbstat reads through the WAL, so it sees the pages as the last commit left them).
    const owners = new Map<number, string>();
    for (const row of db.prepare<[], { name: string; pageno: number; pagetype: string }>('SELECT name, pageno, pagetype FROM dbstat').all()) {
      owners.set(row.pageno, `${row.name} (${row.pagetype})`);
    }
    const byOwner = new Map<string, number>();
    for (const frame of frames) {
      const owner = frame.page === 1 ? 'page 1 (file header, sqlite_schema)' : owners.get(frame.page) ?? 'free list / other';
      byOwner.set(owner, (byOwner.get(owner) ?? 0) + 1);
    }
    const envelope = (await ops.agentRuns.load('wal-measured'))!;
    ops.close();
    return {
      walBytesPerStep: grown / STEPS,
      framesPerStep: frames.length / STEPS,
      commitsPerStep: frames.filter((f) => f.commit).length / STEPS,
      pageSize,
      savedBytesPerStep: counted.bytes() / STEPS,
      data: stepDataBytes(envelope),
      byOwner: [...byOwner].sort((a, b) => b[1] - a[1]).map(([owner, n]) => ({ owner, framesPerStep: n / STEPS })),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

interface WalCounters {
  lsn: string;
  records: number | null;
  fpi: number | null;
}

async function measurePostgres(url: string): Promise<{ rows: PostgresWal[]; others: number; checkpointed: boolean }> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const schema = `cairn_bench_wal_${Date.now()}`;
  const ops = createPostgresOpsStore({ connectionString: url }, { schema });
  try {
    await ops.setup();
    const warm = await toolLoop(ops.agentRuns, 'wal-warmup', STEPS);
    if (warm.status !== 'completed') throw new Error(`wal: the warm-up loop ended ${warm.status}`);
    const others = Number((await admin.query(
      "SELECT count(*) AS n FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
    )).rows[0].n);
    const counters = async (): Promise<WalCounters> => {
      const lsn = (await admin.query('SELECT pg_current_wal_lsn() AS lsn')).rows[0].lsn as string;
      try {
        const row = (await admin.query('SELECT wal_records, wal_fpi FROM pg_stat_wal')).rows[0];
        return { lsn, records: Number(row.wal_records), fpi: Number(row.wal_fpi) };
      } catch {
        // pg_stat_wal is PostgreSQL 14 and later.
        return { lsn, records: null, fpi: null };
      }
    };
    let checkpointed = true;
    await admin.query('CHECKPOINT').catch(() => {
      checkpointed = false;
    });
    const rows: PostgresWal[] = [];
    const labels = [checkpointed ? `first ${STEPS} steps after a CHECKPOINT` : `${STEPS} steps (no CHECKPOINT: not allowed)`, `next ${STEPS} steps`];
    for (const [i, label] of labels.entries()) {
      const runId = `wal-measured-${i}`;
      const counted = countingStore(ops.agentRuns);
      const before = await counters();
      const result = await toolLoop(counted.store, runId, STEPS);
      const after = await counters();
      if (result.status !== 'completed') throw new Error(`wal: the loop ended ${result.status}`);
      const bytes = Number((await admin.query('SELECT pg_wal_lsn_diff($1, $2) AS n', [after.lsn, before.lsn])).rows[0].n);
      const per = (a: number | null, b: number | null) => (a === null || b === null ? null : (a - b) / STEPS);
      rows.push({
        label,
        walBytesPerStep: bytes / STEPS,
        recordsPerStep: per(after.records, before.records),
        fullPageImagesPerStep: per(after.fpi, before.fpi),
        commitsPerStep: counted.saves() / STEPS,
        data: stepDataBytes((await ops.agentRuns.load(runId))!),
      });
    }
    return { rows, others, checkpointed };
  } finally {
    await ops.close();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
}

export interface WalFigures {
  sqlite: SqliteWal;
  postgres: { rows: PostgresWal[]; others: number; checkpointed: boolean } | null;
  skipped: string | null;
}

export async function measureWal(): Promise<WalFigures> {
  const sqlite = await measureSqlite();
  try {
    return { sqlite, postgres: await measurePostgres(POSTGRES_URL), skipped: null };
  } catch (error) {
    return { sqlite, postgres: null, skipped: (error as Error).message };
  }
}

export function printWal({ sqlite, postgres, skipped }: WalFigures): void {
  const f = (n: number, d = 0) => n.toLocaleString('en', { minimumFractionDigits: d, maximumFractionDigits: d });
  const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
  console.log(
    `\nWrite amplification: log bytes a durable tool step writes (${STEPS}-step loop, after one untimed loop), against the JSON bytes of ` +
    'what the step adds (its turn and tool result messages and its receipt)\n',
  );
  console.log('| store | log bytes per step | step data (JSON) bytes | log / data | commits per step | bytes the saves hand the store (encoded) | target | |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |');
  const sqliteRatio = sqlite.walBytesPerStep / sqlite.data.perStep;
  console.log(
    `| sqlite WAL (${sqlite.pageSize} B pages, ${f(sqlite.framesPerStep, 1)} frames a step) | ${f(sqlite.walBytesPerStep)} | ${f(sqlite.data.perStep)} | ` +
    `${f(sqliteRatio, 1)}x | ${f(sqlite.commitsPerStep, 2)} | ${f(sqlite.savedBytesPerStep)} | ≤ ${TARGET_RATIO}x | ${verdict(sqliteRatio <= TARGET_RATIO)} |`,
  );
  for (const r of postgres?.rows ?? []) {
    const ratio = r.walBytesPerStep / r.data.perStep;
    const detail = r.recordsPerStep === null ? '' : `, ${f(r.recordsPerStep, 1)} records and ${f(r.fullPageImagesPerStep!, 1)} full-page images a step`;
    console.log(
      `| postgres WAL, ${r.label}${detail} | ${f(r.walBytesPerStep)} | ${f(r.data.perStep)} | ${f(ratio, 1)}x | ${f(r.commitsPerStep, 2)} | | ` +
      `(printed beside) | |`,
    );
  }
  if (skipped) console.log(`\npostgres: skipped (${skipped})`);
  if (postgres) console.log(`\nPostgreSQL's WAL position is cluster-wide: ${postgres.others} other session(s) were running a statement when the loop started.`);
  console.log(
    `Step data: ${f(sqlite.data.messages)} B of messages and ${f(sqlite.data.receipts)} B of receipt a step. ` +
    `SQLite frames: ${FRAME_HEADER} B header + one ${sqlite.pageSize} B page each; what a step's frames hold:\n`,
  );
  console.log('| page owner (table or index, page type) | frames per step | bytes per step |');
  console.log('| --- | ---: | ---: |');
  for (const o of sqlite.byOwner) console.log(`| ${o.owner} | ${f(o.framesPerStep, 2)} | ${f(o.framesPerStep * (sqlite.pageSize + FRAME_HEADER))} |`);
}

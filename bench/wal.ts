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
 * Beside it, the floor, measured the same way in the same run: a hand-written
 * append-only schema doing the same job with the same two commits a step
 * (the step's message row and its receipt appended, a small head row
 * upserted; the receipt is appended again when completed, never updated),
 * same WAL, synchronous=FULL and page size, fed the same bytes as the step
 * data. It shows what the simplest design writes, next to the bound no design
 * can go under: each commit writes at least one whole page frame.
 *
 * Cairn's SQLite figure is taken twice: on a new file (the page size Cairn
 * creates files with) and on a file made with 4,096 B pages, SQLite's default
 * and what files created before Cairn chose a page size have; a file keeps its
 * page size for life.
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
import Database from 'better-sqlite3';
import pg from 'pg';
import type { AgentRunEnvelope, AgentRunStore } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import { connectionOf } from '../src/stores/sqlite/index.js';
import { planSave, type StoredState } from '../src/stores/write-plan.js';
import { toolLoop } from './tool-loop.js';
import { POSTGRES_URL } from './resume.js';

const STEPS = 100;
const TARGET_RATIO = 3;
const WAL_HEADER = 32;
const FRAME_HEADER = 24;
/** SQLite's default page size, and that of every file created before Cairn set one. */
const LEGACY_PAGE_SIZE = 4096;

/** JSON bytes of what the run's steps added: every message after the prompt, and every receipt. Per step. */
function stepDataBytes(envelope: AgentRunEnvelope): { perStep: number; messages: number; receipts: number } {
  const context = (envelope.snapshot as { context: { messages: { role: string }[] } }).context;
  const added = context.messages.filter((m) => m.role !== 'system' && m.role !== 'user');
  const messages = added.reduce((n, m) => n + Buffer.byteLength(JSON.stringify(m)), 0);
  const receipts = Object.values(envelope.receipts).reduce((n, r) => n + Buffer.byteLength(JSON.stringify(r)), 0);
  return { perStep: (messages + receipts) / STEPS, messages: messages / STEPS, receipts: receipts / STEPS };
}

/**
 * Counts the saves and the bytes each one hands the database: the store's own write plan made again beside it
 * (head and the rows it adds or rewrites, encoded), without the zero fill a SQLite head is laid out with, which
 * is no data; the same count on both stores.
 */
function countingStore(inner: AgentRunStore) {
  let saves = 0;
  let bytes = 0;
  let stored: StoredState | undefined;
  const store: AgentRunStore = {
    load: (runId, options) => inner.load(runId, options),
    async save(envelope, options) {
      await inner.save(envelope, options);
      saves++;
      const plan = planSave(envelope, stored);
      stored = plan.next;
      bytes += plan.bytes;
    },
  };
  return { store, saves: () => saves, bytes: () => bytes };
}

interface Frame {
  page: number;
  commit: boolean;
  /** For a commit's last frame, the database's size in pages after the commit; 0 otherwise. */
  pagesAfter: number;
}

/** Every frame of a WAL file: the page it holds and whether it ends a commit. */
function readFrames(path: string, pageSize: number): Frame[] {
  const size = statSync(path).size;
  const fd = openSync(path, 'r');
  const frames: Frame[] = [];
  const header = Buffer.alloc(FRAME_HEADER);
  try {
    for (let at = WAL_HEADER; at + FRAME_HEADER + pageSize <= size; at += FRAME_HEADER + pageSize) {
      readSync(fd, header, 0, FRAME_HEADER, at);
      const pagesAfter = header.readUInt32BE(4);
      frames.push({ page: header.readUInt32BE(0), commit: pagesAfter !== 0, pagesAfter });
    }
  } finally {
    closeSync(fd);
  }
  return frames;
}

/** What a file's frames say about page 1 (the database header): in how many commits it was, and how many grew the file. */
interface PageOne {
  commits: number;
  withPageOne: number;
  grew: number;
  /** Commits that wrote page 1 without growing the file (a page taken from or given back to the free list). */
  withPageOneNotGrowing: number;
  /** Commits that grew the file without writing page 1: SQLite always writes it then, so this should be 0. */
  grewWithoutPageOne: number;
}

function pageOneOf(frames: readonly Frame[], pagesBefore: number): PageOne {
  const out: PageOne = { commits: 0, withPageOne: 0, grew: 0, withPageOneNotGrowing: 0, grewWithoutPageOne: 0 };
  let pages = pagesBefore;
  let hasPageOne = false;
  for (const frame of frames) {
    if (frame.page === 1) hasPageOne = true;
    if (!frame.commit) continue;
    const grew = frame.pagesAfter > pages;
    out.commits++;
    if (hasPageOne) out.withPageOne++;
    if (grew) out.grew++;
    if (hasPageOne && !grew) out.withPageOneNotGrowing++;
    if (grew && !hasPageOne) out.grewWithoutPageOne++;
    pages = frame.pagesAfter;
    hasPageOne = false;
  }
  return out;
}

/** Frames per step by the table or index (and page type) that owns each frame's page now. */
function owners(db: Database.Database, frames: readonly Frame[]): { owner: string; framesPerStep: number }[] {
  // dbstat reads through the WAL, so it sees the pages as the last commit left them.
  const byPage = new Map<number, string>();
  for (const row of db.prepare<[], { name: string; pageno: number; pagetype: string }>('SELECT name, pageno, pagetype FROM dbstat').all()) {
    byPage.set(row.pageno, `${row.name} (${row.pagetype})`);
  }
  const byOwner = new Map<string, number>();
  for (const frame of frames) {
    const owner = frame.page === 1 ? 'page 1 (file header, sqlite_schema)' : byPage.get(frame.page) ?? 'free list / other';
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + 1);
  }
  return [...byOwner].sort((a, b) => b[1] - a[1]).map(([owner, n]) => ({ owner, framesPerStep: n / STEPS }));
}

export interface SqliteWal {
  label: string;
  walBytesPerStep: number;
  framesPerStep: number;
  commitsPerStep: number;
  pageSize: number;
  /** Bytes handed to the database per step: what the saves encoded (Cairn), or the rows' bytes (the floor). */
  savedBytesPerStep: number;
  data: ReturnType<typeof stepDataBytes>;
  /** Frames per step by the table or index (and page type) that owns the page. */
  byOwner: { owner: string; framesPerStep: number }[];
  pageOne: PageOne;
}

export interface PostgresWal {
  label: string;
  walBytesPerStep: number;
  recordsPerStep: number | null;
  fullPageImagesPerStep: number | null;
  /** Where the counts come from: the records themselves (pg_walinspect), or pg_stat_wal's counters (flushed late). */
  countedBy: 'pg_walinspect' | 'pg_stat_wal' | null;
  commitsPerStep: number;
  /** Bytes the saves hand the database per step (see countingStore). */
  savedBytesPerStep: number;
  data: ReturnType<typeof stepDataBytes>;
  /** WAL record bytes per step by the relation of the record's first block (pg_walinspect only). */
  byRelation: { relation: string; recordsPerStep: number; bytesPerStep: number; fpiBytesPerStep: number }[];
}

/**
 * Empties the WAL and stops automatic checkpoints, runs `loop`, and reads
 * what it wrote to the -wal file: every frame, so every page each commit wrote.
 */
async function walOf(db: Database.Database, path: string, loop: () => Promise<void>) {
  db.pragma('wal_autocheckpoint = 0');
  db.pragma('wal_checkpoint(TRUNCATE)');
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const pagesBefore = db.pragma('page_count', { simple: true }) as number;
  const before = statSync(`${path}-wal`).size;
  await loop();
  const grown = statSync(`${path}-wal`).size - before;
  const frames = readFrames(`${path}-wal`, pageSize);
  return {
    pageSize,
    walBytesPerStep: grown / STEPS,
    framesPerStep: frames.length / STEPS,
    commitsPerStep: frames.filter((f) => f.commit).length / STEPS,
    byOwner: owners(db, frames),
    pageOne: pageOneOf(frames, pagesBefore),
  };
}

/**
 * Cairn's store on a new file; with `pageSize`, on a file created with that
 * page size first (as an existing file made before Cairn chose one is).
 */
async function measureSqlite(label: string, pageSize?: number): Promise<{ wal: SqliteWal; envelope: AgentRunEnvelope }> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-wal-'));
  try {
    const path = join(dir, 'wal.sqlite');
    if (pageSize !== undefined) {
      const made = new Database(path);
      made.pragma(`page_size = ${pageSize}`);
      made.exec('CREATE TABLE made_before (x); DROP TABLE made_before');
      made.close();
    }
    const ops = createSqliteOpsStore({ path, synchronous: 'full' });
    const db = connectionOf(ops);
    const warm = await toolLoop(ops.agentRuns, 'wal-warmup', STEPS);
    if (warm.status !== 'completed') throw new Error(`wal: the warm-up loop ended ${warm.status}`);
    const counted = countingStore(ops.agentRuns);
    const measured = await walOf(db, path, async () => {
      const result = await toolLoop(counted.store, 'wal-measured', STEPS);
      if (result.status !== 'completed') throw new Error(`wal: the loop ended ${result.status}`);
    });
    if (pageSize !== undefined && measured.pageSize !== pageSize) throw new Error(`wal: the file has ${measured.pageSize} B pages, not ${pageSize}`);
    const envelope = (await ops.agentRuns.load('wal-measured'))!;
    ops.close();
    return { wal: { label, ...measured, savedBytesPerStep: counted.bytes() / STEPS, data: stepDataBytes(envelope) }, envelope };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The rows the floor appends, commit by commit, from a Cairn run's record:
 * each step's turn with its call's receipt as `executing` (the receipt without
 * its result), then the tool result message with the completed receipt.
 */
function floorCommits(envelope: AgentRunEnvelope): Buffer[][] {
  const context = (envelope.snapshot as { context: { messages: { role: string; toolCalls?: { toolCallId: string }[] }[] } }).context;
  const receipts = new Map(Object.values(envelope.receipts).map((r) => [(r as { toolCallId: string }).toolCallId, r as unknown as Record<string, unknown>]));
  const json = (value: unknown) => Buffer.from(JSON.stringify(value));
  const commits: Buffer[][] = [];
  const messages = context.messages.filter((m) => m.role !== 'system' && m.role !== 'user');
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    const call = message.toolCalls?.[0];
    const receipt = call ? receipts.get(call.toolCallId) : undefined;
    if (!receipt || messages[i + 1]?.role !== 'tool') {
      commits.push([json(message)]);
      continue;
    }
    const { rawResult: _raw, modelOutput: _output, ...executing } = receipt;
    commits.push([json(message), json({ ...executing, status: 'executing' })]);
    commits.push([json(messages[++i]), json(receipt)]);
  }
  return commits;
}

const FLOOR_SCHEMA = [
  'CREATE TABLE floor_heads (run_id TEXT PRIMARY KEY, revision INTEGER NOT NULL, length INTEGER NOT NULL)',
  'CREATE TABLE floor_log (run_id TEXT NOT NULL, seq INTEGER NOT NULL, body BLOB NOT NULL, PRIMARY KEY (run_id, seq))',
];

/**
 * The floor: the simplest schema doing the same job, two commits a step, each
 * appending its rows to one log keyed by (run, sequence) and upserting the
 * run's head (revision, length); nothing is ever updated in place. Same
 * pragmas and page size as Cairn's file, same run ids, one untimed run first.
 */
async function measureFloor(pageSize: number, envelope: AgentRunEnvelope): Promise<SqliteWal> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-wal-floor-'));
  const path = join(dir, 'floor.sqlite');
  const db = new Database(path);
  try {
    db.pragma(`page_size = ${pageSize}`);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    for (const statement of FLOOR_SCHEMA) db.exec(statement);
    const append = db.prepare<[string, number, Buffer]>('INSERT INTO floor_log (run_id, seq, body) VALUES (?, ?, ?)');
    const head = db.prepare<[string, number, number]>(`INSERT INTO floor_heads (run_id, revision, length) VALUES (?, ?, ?)
  ON CONFLICT (run_id) DO UPDATE SET revision = excluded.revision, length = excluded.length`);
    const commits = floorCommits(envelope);
    let bytes = 0;
    const commit = db.transaction((runId: string, revision: number, seq: number, rows: Buffer[]) => {
      for (const [i, row] of rows.entries()) append.run(runId, seq + i, row);
      head.run(runId, revision, seq + rows.length);
    });
    const loop = (runId: string) => {
      let seq = 0;
      bytes = 0;
      for (const [i, rows] of commits.entries()) {
        commit.immediate(runId, i + 1, seq, rows);
        seq += rows.length;
        for (const row of rows) bytes += row.length;
      }
    };
    loop('wal-warmup');
    const measured = await walOf(db, path, async () => loop('wal-measured'));
    return {
      label: 'floor: append-only log + head row', ...measured,
      savedBytesPerStep: bytes / STEPS, data: stepDataBytes(envelope),
    };
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

interface WalCounters {
  lsn: string;
  records: number | null;
  fpi: number | null;
}

/**
 * The records between two WAL positions, read back from the WAL with
 * pg_walinspect (PostgreSQL 15 and later), grouped by the relation of each
 * record's first block; null where the extension cannot be had.
 */
async function walRecords(admin: pg.Client, at: string, from: string, to: string, schema: string) {
  const rows = (await admin.query<{ rmgr: string; length: number; fpi: number; block_ref: string | null }>(
    `SELECT resource_manager AS rmgr, record_length AS length, fpi_length AS fpi, block_ref
       FROM "${at}".pg_get_wal_records_info($1, $2)`, [from, to])).rows;
  const nodes = new Set<number>();
  const nodeOf = (ref: string | null) => {
    const m = ref === null ? null : /rel \d+\/\d+\/(\d+) fork (\w+)/.exec(ref);
    return m ? { node: Number(m[1]), fork: m[2]! } : null;
  };
  for (const row of rows) {
    const n = nodeOf(row.block_ref);
    if (n) nodes.add(n.node);
  }
  // Each relation by name: a TOAST table or its index under the table it belongs to.
  const names = new Map<number, string>();
  for (const r of (await admin.query<{ node: number; name: string }>(
    `SELECT c.relfilenode AS node,
            CASE WHEN n.nspname = $2 THEN c.relname
                 WHEN owner.relname IS NOT NULL THEN owner.relname || CASE WHEN c.relkind = 'i' THEN ' (TOAST index)' ELSE ' (TOAST)' END
                 ELSE n.nspname || '.' || c.relname END AS name
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_index ti ON ti.indexrelid = c.oid
       LEFT JOIN pg_class owner ON n.nspname = 'pg_toast'
         AND owner.reltoastrelid = CASE WHEN c.relkind = 'i' THEN ti.indrelid ELSE c.oid END
      WHERE c.relfilenode = ANY($1::oid[])`, [[...nodes], schema])).rows) {
    names.set(Number(r.node), r.name);
  }
  const by = new Map<string, { records: number; bytes: number; fpi: number }>();
  let fpiRecords = 0;
  for (const row of rows) {
    const n = nodeOf(row.block_ref);
    const relation = n
      ? `${names.get(n.node) ?? 'another relation'}${n.fork === 'main' ? '' : ` (${n.fork} fork)`}`
      : `no relation (${row.rmgr})`;
    const entry = by.get(relation) ?? { records: 0, bytes: 0, fpi: 0 };
    entry.records++;
    entry.bytes += Number(row.length);
    entry.fpi += Number(row.fpi);
    if (Number(row.fpi) > 0) fpiRecords++;
    by.set(relation, entry);
  }
  return {
    records: rows.length,
    fpiRecords,
    byRelation: [...by].sort((a, b) => b[1].bytes - a[1].bytes).map(([relation, e]) => ({
      relation, recordsPerStep: e.records / STEPS, bytesPerStep: e.bytes / STEPS, fpiBytesPerStep: e.fpi / STEPS,
    })),
  };
}

/**
 * pg_walinspect's functions, in the bench's own schema unless the database
 * has the extension already (then that one); null when it cannot be created.
 */
async function walInspect(admin: pg.Client, schema: string): Promise<string | null> {
  const found = (await admin.query<{ at: string }>(
    "SELECT n.nspname AS at FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_walinspect'")).rows[0];
  if (found) return found.at;
  try {
    await admin.query(`CREATE EXTENSION pg_walinspect SCHEMA "${schema}"`);
    return schema;
  } catch {
    return null;
  }
}

async function measurePostgres(url: string): Promise<{ rows: PostgresWal[]; others: number; checkpointed: boolean }> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const schema = `cairn_bench_wal_${Date.now()}`;
  const ops = createPostgresOpsStore({ connectionString: url }, { schema });
  try {
    await ops.setup();
    // Dropped with the schema at the end.
    const inspect = await walInspect(admin, schema);
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
      // pg_stat_wal's counters are flushed by each backend when it reports its statistics (at most once a second,
      // and not while it is busy), so they can miss the loop's records; the records themselves are exact.
      const records = inspect ? await walRecords(admin, inspect, before.lsn, after.lsn, schema) : null;
      rows.push({
        label,
        walBytesPerStep: bytes / STEPS,
        recordsPerStep: records ? records.records / STEPS : per(after.records, before.records),
        fullPageImagesPerStep: records ? records.fpiRecords / STEPS : per(after.fpi, before.fpi),
        countedBy: records ? 'pg_walinspect' : after.records === null ? null : 'pg_stat_wal',
        commitsPerStep: counted.saves() / STEPS,
        savedBytesPerStep: counted.bytes() / STEPS,
        data: stepDataBytes((await ops.agentRuns.load(runId))!),
        byRelation: records?.byRelation ?? [],
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
  /** Cairn on a new file (the page size Cairn creates files with). */
  sqlite: SqliteWal;
  /** Cairn on a file made with SQLite's default 4,096 B pages; null when new files have those too. */
  legacy: SqliteWal | null;
  /** The floor at the new file's page size, then at 4,096 B when that differs. */
  floors: SqliteWal[];
  postgres: { rows: PostgresWal[]; others: number; checkpointed: boolean } | null;
  skipped: string | null;
}

export async function measureWal(): Promise<WalFigures> {
  const { wal: sqlite, envelope } = await measureSqlite('Cairn, new file');
  const legacy = sqlite.pageSize === LEGACY_PAGE_SIZE
    ? null
    : (await measureSqlite(`Cairn, file made with ${LEGACY_PAGE_SIZE} B pages`, LEGACY_PAGE_SIZE)).wal;
  const floors = [await measureFloor(sqlite.pageSize, envelope)];
  if (legacy) floors.push(await measureFloor(LEGACY_PAGE_SIZE, envelope));
  try {
    return { sqlite, legacy, floors, postgres: await measurePostgres(POSTGRES_URL), skipped: null };
  } catch (error) {
    return { sqlite, legacy, floors, postgres: null, skipped: (error as Error).message };
  }
}

export function printWal({ sqlite, legacy, floors, postgres, skipped }: WalFigures): void {
  const f = (n: number, d = 0) => n.toLocaleString('en', { minimumFractionDigits: d, maximumFractionDigits: d });
  const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
  const data = sqlite.data.perStep;
  console.log(
    `\nWrite amplification: log bytes a durable tool step writes (${STEPS}-step loop, after one untimed loop), against the JSON bytes of ` +
    'what the step adds (its turn and tool result messages and its receipt)\n',
  );
  // Two readings of "the bytes the step's data takes". The issue measured 74 kB of log "for 5 kB of data", the
  // bytes one step's saves hand the database (then about 5.9 kB: the head twice, the turn, the result): log over
  // those is the column "log / saved". The stricter reading counts only what the step adds (its messages and
  // receipt as JSON, no head): "log / new data". Both are printed with their verdicts.
  console.log(
    '| store | log bytes per step | bytes handed to the database per step (saved) | new data (JSON) bytes | log / saved | target ' +
    '(the issue\'s measure) | log / new data | target (stricter reading) | commits per step |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | --- | ---: | --- | ---: |');
  const sqliteRow = (r: SqliteWal, target: boolean) => {
    const ratio = r.walBytesPerStep / r.data.perStep;
    const saved = r.walBytesPerStep / r.savedBytesPerStep;
    const check = (x: number) => (target ? `≤ ${TARGET_RATIO}x: ${verdict(x <= TARGET_RATIO)}` : '(the floor)');
    console.log(
      `| sqlite WAL, ${r.label} (${r.pageSize} B pages, ${f(r.framesPerStep, 1)} frames a step) | ${f(r.walBytesPerStep)} | ` +
      `${f(r.savedBytesPerStep)} | ${f(r.data.perStep)} | ${f(saved, 2)}x | ${check(saved)} | ${f(ratio, 1)}x | ${check(ratio)} | ` +
      `${f(r.commitsPerStep, 2)} |`,
    );
  };
  sqliteRow(sqlite, true);
  if (legacy) sqliteRow(legacy, true);
  for (const floor of floors) sqliteRow(floor, false);
  for (const r of postgres?.rows ?? []) {
    const ratio = r.walBytesPerStep / r.data.perStep;
    const detail = r.recordsPerStep === null ? ''
      : `, ${f(r.recordsPerStep, 1)} records and ${f(r.fullPageImagesPerStep!, 1)} full-page images a step (${r.countedBy})`;
    const saved = r.savedBytesPerStep > 0 ? `${f(r.walBytesPerStep / r.savedBytesPerStep, 2)}x` : '';
    console.log(
      `| postgres WAL, ${r.label}${detail} | ${f(r.walBytesPerStep)} | ${r.savedBytesPerStep > 0 ? f(r.savedBytesPerStep) : ''} | ` +
      `${f(r.data.perStep)} | ${saved} | (printed beside) | ${f(ratio, 1)}x | (printed beside) | ${f(r.commitsPerStep, 2)} |`,
    );
  }
  if (skipped) console.log(`\npostgres: skipped (${skipped})`);
  if (postgres) console.log(`\nPostgreSQL's WAL position is cluster-wide: ${postgres.others} other session(s) were running a statement when the loop started.`);
  const pgRows = (postgres?.rows ?? []).filter((r) => r.byRelation.length > 0);
  if (pgRows.length > 0) {
    console.log(
      '\nPostgreSQL\'s records by the relation of their first block (read back with pg_walinspect): records a step, and bytes a step ' +
      '(of which full-page images):\n',
    );
    const relations = [...new Set(pgRows.flatMap((r) => r.byRelation.map((b) => b.relation)))];
    const of = (r: PostgresWal, relation: string) => r.byRelation.find((b) => b.relation === relation);
    relations.sort((a, b) => (of(pgRows.at(-1)!, b)?.bytesPerStep ?? 0) - (of(pgRows.at(-1)!, a)?.bytesPerStep ?? 0));
    console.log(`| relation | ${pgRows.map((r) => r.label).join(' | ')} |`);
    console.log(`| --- |${pgRows.map(() => ' ---: |').join('')}`);
    for (const relation of relations) {
      const cells = pgRows.map((r) => {
        const b = of(r, relation);
        if (!b) return '';
        return `${f(b.recordsPerStep, 2)} · ${f(b.bytesPerStep)} B${b.fpiBytesPerStep > 0 ? ` (${f(b.fpiBytesPerStep)} B)` : ''}`;
      });
      console.log(`| ${relation} | ${cells.join(' | ')} |`);
    }
  }

  // The bound: SQLite logs whole pages, at least one frame a commit.
  const commits = sqlite.commitsPerStep;
  const allowed = TARGET_RATIO * data;
  console.log(
    `\nThe bound, for the stricter reading: SQLite's WAL holds whole pages, so a commit writes at least one frame (${FRAME_HEADER} B + ` +
    `a page), and a step's ${f(commits, 2)} commits at least ${f(commits, 2)} frames:`,
  );
  for (const pageSize of [...new Set([sqlite.pageSize, LEGACY_PAGE_SIZE, 1024, 512])].sort((a, b) => b - a)) {
    const least = commits * (pageSize + FRAME_HEADER);
    console.log(
      `- ${pageSize} B pages: ≥ ${f(least)} B a step = ${f(least / data, 1)}x of ${f(data)} B; ${TARGET_RATIO}x (${f(allowed)} B) allows ` +
      `${f(allowed / commits / (pageSize + FRAME_HEADER), 2)} frames a commit`,
    );
  }
  console.log(
    '  The floor schema writes more than one frame a commit: the head row\'s leaf, the log\'s leaf and its key\'s index leaf each commit, ' +
    'interior pages when a leaf splits, and page 1 whenever a commit takes a new page.',
  );

  const one = sqlite.pageOne;
  console.log(
    `\nPage 1 (the file header) on the new file: in ${one.withPageOne} of ${one.commits} commits; the file grew in ${one.grew}, ` +
    `${one.grewWithoutPageOne === 0 ? 'and every commit that grew it wrote page 1' : `${one.grewWithoutPageOne} of them without page 1`}; ` +
    `${one.withPageOneNotGrowing} wrote page 1 without growing the file. A commit that takes a new page at the end of the file writes the ` +
    'header\'s page count (offset 28), and one that takes or frees a free-list page the free-list count (offset 36); in WAL mode no ' +
    'change counter or schema cookie is written by a commit that changes no schema.',
  );

  console.log(
    `\nStep data: ${f(sqlite.data.messages)} B of messages and ${f(sqlite.data.receipts)} B of receipt a step. ` +
    `SQLite frames: ${FRAME_HEADER} B header + one page each; what a step's frames hold (frames per step, bytes per step):\n`,
  );
  const columns = [sqlite, ...(legacy ? [legacy] : []), ...floors];
  const names = [...new Set(columns.flatMap((c) => c.byOwner.map((o) => o.owner)))];
  const framesOf = (c: SqliteWal, owner: string) => c.byOwner.find((o) => o.owner === owner)?.framesPerStep ?? 0;
  // Cairn's new file first, by its bytes; then what only the others write.
  const bytesIn = (c: SqliteWal, owner: string) => framesOf(c, owner) * (c.pageSize + FRAME_HEADER);
  names.sort((a, b) => {
    for (const c of columns) {
      const d = bytesIn(c, b) - bytesIn(c, a);
      if (d !== 0) return d;
    }
    return 0;
  });
  console.log(`| page owner (table or index, page type) | ${columns.map((c) => `${c.label}, ${c.pageSize} B`).join(' | ')} |`);
  console.log(`| --- |${columns.map(() => ' ---: |').join('')}`);
  for (const owner of names) {
    const cells = columns.map((c) => {
      const n = framesOf(c, owner);
      return n === 0 ? '' : `${f(n, 2)} (${f(n * (c.pageSize + FRAME_HEADER))} B)`;
    });
    console.log(`| ${owner} | ${cells.join(' | ')} |`);
  }
}

/**
 * The Redis AgentRunStore. A run is a head hash (the head bytes, the summary
 * fields list reads, the digests of its other rows and its revision), its
 * transcript as a list (appended to, one element per message) and its
 * receipts as hashes keyed by receipt key: the rows the shared planner
 * (../write-plan.ts) writes for SQLite and PostgreSQL, so a save writes what
 * the step added, not the whole history.
 *
 * Every save is one Lua script (./run-scripts.ts): it checks the scope, that
 * the revision is the stored one plus one, that the lease is still held on the
 * server's clock and that the rows are what the plan was made against, and
 * only then writes. A save by the store object that wrote the previous
 * revision plans from what it remembers; any other reads the run's state
 * first (one script, one snapshot) and plans from that.
 */
import { createHash } from 'node:crypto';
import {
  AgentRunLeaseError, InvalidOptionsError, RevisionConflictError, RunIdentityError, StoredRecordError,
} from '../../errors/index.js';
import type { AgentRunEnvelope } from '../../agent/types.js';
import type { AgentRunListPage, AgentRunListQuery, AgentRunStore, Lease } from '../types.js';
import {
  checkSaveEnvelope, decodeCursor, finiteTime, isAgentRunStatus, listLimit, listPage, listStatuses, toSummary,
} from '../list-query.js';
import {
  planSave, readIndex, readRecord, SaveMemory, type PlanIndex, type SavePlan, type StoredRows, type StoredState,
} from '../write-plan.js';
import { bytes, list, num, text, type Arg, type RedisConn, type Reply } from './client.js';
import { runKeyList, type Keys } from './keys.js';
import { LOAD, PRUNE_ONE, SAVE, STATE, SUMMARIES } from './run-scripts.js';

/** An AgentRunStore with list and prune. */
export interface RedisAgentRunStore extends AgentRunStore {
  /** Names the backend, so a `checkpointVersion: 3` run can refuse this store as Redis (it keeps no V3 records). */
  readonly backend: 'redis';
  list(query?: AgentRunListQuery): Promise<AgentRunListPage>;
  prune(options: { terminalBefore: number }): Promise<number>;
}

/** How many times a save plans again when the rows moved under it at the same revision. */
const PLAN_TRIES = 3;
/** Runs read per round trip by list and prune. */
const BATCH = 200;

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest();

/** @internal Takes the store's connection, whose driver types stay out of the published declarations (redis is an optional peer). */
export function createRedisAgentRunStore(conn: RedisConn, k: Keys): RedisAgentRunStore {
  /** What this store object's last save (or load) of each run left in its rows. */
  const memory = new SaveMemory();

  /** What the rows hold now, read in one script; undefined when the run is not stored. */
  async function readState(runId: string): Promise<{ scope: string; state: StoredState; tlen: string; settled: string } | undefined> {
    const reply = list(await conn.eval(`Saving run ${runId}`, STATE, runKeyList(k.run(runId)), [], true));
    if (reply.length === 0) return undefined;
    const head = bytes(reply[3]);
    let index: PlanIndex | null = null;
    try {
      index = readIndex(runId, head);
    } catch {
      // A head that does not decode: the save writes every row again.
    }
    const unsettled = new Map<string, Uint8Array>();
    const open = list(reply[8]);
    for (let i = 0; i < open.length; i += 2) unsettled.set(text(open[i])!, sha256(bytes(open[i + 1])));
    return {
      scope: text(reply[1])!,
      tlen: text(reply[6])!,
      settled: text(reply[7])!,
      state: {
        revision: num(reply[2])!, index, unsettled, transcriptDigest: bytes(reply[4]), receiptsDigest: bytes(reply[5]),
      },
    };
  }

  /** Runs the save script for `plan`; `expect` is what the rows must hold (null for a first save). */
  async function write(envelope: AgentRunEnvelope, lease: Lease | undefined, plan: SavePlan,
    expect: { tlen: string; tdig: Uint8Array; rdig: Uint8Array; settled: string } | null): Promise<string> {
    const index = plan.next.index!;
    const args: Arg[] = [
      envelope.runId, envelope.scope, envelope.revision,
      expect ? '1' : '0', expect?.tlen ?? '', expect?.tdig ?? '', expect?.rdig ?? '', expect?.settled ?? '',
      lease?.owner ?? '', lease ? String(lease.token) : '',
      envelope.status, envelope.bindingId == null ? '0' : '1', envelope.bindingId ?? '', envelope.createdAt, envelope.updatedAt,
      envelope.pendingApprovals.length, envelope.pendingClientCalls.length, plan.head,
      index.length, plan.next.transcriptDigest, plan.next.receiptsDigest, index.settledStep,
      plan.trimMessagesFrom === null ? '' : plan.trimMessagesFrom, plan.replaceReceipts ? '1' : '0',
      plan.messages.length, plan.messages[0]?.index ?? 0, plan.deleteReceipts.length, plan.receipts.length,
    ];
    for (const m of plan.messages) args.push(m.bytes);
    for (const key of plan.deleteReceipts) args.push(key);
    for (const r of plan.receipts) args.push(r.key, r.modelStep, r.bytes);
    const keys = [...runKeyList(k.run(envelope.runId)), k.runs, lease ? k.lease(lease.key) : k.runs];
    const reply = list(await conn.eval(`Saving run ${envelope.runId}`, SAVE, keys, args));
    const outcome = text(reply[0]);
    if (outcome === 'scope') throw new RunIdentityError('scope_mismatch', envelope.runId);
    if (outcome === 'conflict') {
      const stored = text(reply[1]);
      throw new RevisionConflictError(envelope.runId, envelope.revision - 1, stored === '' || stored === null ? null : Number(stored));
    }
    if (outcome === 'lease') throw new AgentRunLeaseError('lease_lost', lease!.key);
    return outcome ?? 'stale';
  }

  const expectOf = (state: StoredState, tlen: string, settled: string) => ({
    tlen, settled, tdig: state.transcriptDigest, rdig: state.receiptsDigest,
  });

  async function saveLater(envelope: AgentRunEnvelope, lease: Lease | undefined): Promise<SavePlan> {
    const last = memory.last(envelope.runId);
    if (last && last.revision === envelope.revision - 1 && last.index) {
      const plan = planSave(envelope, last);
      if (await write(envelope, lease, plan, expectOf(last, String(last.index.length), String(last.index.settledStep))) === 'ok') return plan;
    }
    for (let attempt = 1; ; attempt++) {
      const read = await readState(envelope.runId);
      if (read && read.scope !== envelope.scope) throw new RunIdentityError('scope_mismatch', envelope.runId);
      if (!read || read.state.revision !== envelope.revision - 1) {
        throw new RevisionConflictError(envelope.runId, envelope.revision - 1, read ? read.state.revision : null);
      }
      const plan = planSave(envelope, read.state);
      if (await write(envelope, lease, plan, expectOf(read.state, read.tlen, read.settled)) === 'ok') return plan;
      if (attempt >= PLAN_TRIES) throw new RevisionConflictError(envelope.runId, envelope.revision - 1, null);
    }
  }

  /** Run ids from the index, newest first, from `upper` (a ZRANGE bound) down to `lower`, walked in batches. */
  async function* walk(upper: string, lower: string): AsyncGenerator<{ runId: string; updatedAt: number }> {
    let max = upper;
    let offset = 0;
    for (;;) {
      const reply = list(await conn.call('Listing runs', ['ZRANGE', k.runs, max, lower, 'BYSCORE', 'REV', 'LIMIT', offset, BATCH, 'WITHSCORES']));
      const batch: { runId: string; updatedAt: number }[] = [];
      for (let i = 0; i < reply.length; i += 2) batch.push({ runId: text(reply[i])!, updatedAt: Number(text(reply[i + 1])) });
      yield* batch;
      if (batch.length < BATCH) return;
      // The next batch starts at the last score seen, past the runs of that score already walked.
      const lastScore = batch[batch.length - 1]!.updatedAt;
      const same = batch.filter((r) => r.updatedAt === lastScore).length;
      if (max === String(lastScore)) offset += same;
      else {
        max = String(lastScore);
        offset = same;
      }
    }
  }

  async function summaries(runIds: string[]): Promise<(Reply[] | null)[]> {
    if (runIds.length === 0) return [];
    const reply = list(await conn.eval('Listing runs', SUMMARIES, [], runIds.map((id) => k.run(id).head)));
    return runIds.map((_, i) => (Array.isArray(reply[i]) ? reply[i] as Reply[] : null));
  }

  return {
    backend: 'redis',
    async load(runId, options) {
      if (typeof runId !== 'string' || runId === '') throw new InvalidOptionsError('load needs a run id.');
      const scope = options?.scope;
      const reply = list(await conn.eval(`Loading run ${runId}`, LOAD, runKeyList(k.run(runId)),
        [scope === undefined ? '0' : '1', scope ?? ''], true));
      if (reply.length === 0) return undefined;
      if (text(reply[0]) === 'scope') throw new RunIdentityError('scope_mismatch', runId);
      const head = bytes(reply[3]);
      if (head.length === 0) throw new StoredRecordError('record_corrupt', runId, `Stored record of run ${runId} has no head.`);
      const parts = list(reply[6]);
      const partRevisions = list(reply[7]);
      const receiptPairs = list(reply[8]);
      const receiptRevisions = new Map<string, number>();
      const rr = list(reply[9]);
      for (let i = 0; i < rr.length; i += 2) receiptRevisions.set(text(rr[i])!, Number(text(rr[i + 1])));
      const receipts: StoredRows['receipts'][number][] = [];
      for (let i = 0; i < receiptPairs.length; i += 2) {
        const key = text(receiptPairs[i])!;
        receipts.push({ key, bytes: bytes(receiptPairs[i + 1]), revision: receiptRevisions.get(key) ?? null });
      }
      receipts.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      const storedScope = text(reply[1])!;
      const storedRevision = num(reply[2]);
      const { envelope, stored } = readRecord(runId, {
        head,
        messages: parts.map((p, i) => ({ index: i, bytes: bytes(p), revision: num(partRevisions[i]) })),
        receipts,
        transcriptDigest: bytes(reply[4]),
        receiptsDigest: bytes(reply[5]),
      }, 'bytes', options?.saves === true);
      if (envelope.runId !== runId || envelope.scope !== storedScope || envelope.revision !== storedRevision) {
        throw new StoredRecordError('record_corrupt', runId, `Stored record of run ${runId} does not match its head hash.`);
      }
      memory.loaded(runId, stored);
      return envelope;
    },

    async save(envelope, options) {
      checkSaveEnvelope(envelope);
      const lease = options?.lease;
      let plan: SavePlan | undefined;
      try {
        if (envelope.revision === 1) {
          plan = planSave(envelope, undefined);
          await write(envelope, lease, plan, null);
        } else {
          plan = await saveLater(envelope, lease);
        }
      } catch (error) {
        plan = undefined;
        throw error;
      } finally {
        memory.keep(envelope.runId, envelope.status, plan?.next);
      }
    },

    async list(query = {}) {
      const statuses = listStatuses(query.status);
      if (statuses !== null && statuses.length === 0) return { runs: [] };
      const limit = listLimit(query.limit);
      const after = query.cursor === undefined ? null : decodeCursor(query.cursor);
      const before = query.updatedBefore === undefined ? null : finiteTime('updatedBefore', query.updatedBefore);
      const from = query.updatedAfter === undefined ? null : finiteTime('updatedAfter', query.updatedAfter);
      let upper = '+inf';
      if (after && (before === null || after.updatedAt < before)) upper = String(after.updatedAt);
      else if (before !== null) upper = `(${before}`;
      const lower = from === null ? '-inf' : String(from);
      const found: ReturnType<typeof toSummary>[] = [];
      let pending: string[] = [];
      const flush = async () => {
        const rows = await summaries(pending);
        rows.forEach((f, i) => {
          if (!f || found.length > limit) return;
          const status = text(f[1]);
          if (!isAgentRunStatus(status) || (statuses && !statuses.includes(status))) return;
          if (query.scope !== undefined && text(f[0]) !== query.scope) return;
          found.push(toSummary({
            run_id: pending[i]!, scope: text(f[0])!, status, revision: num(f[2])!, binding_id: text(f[3]),
            created_at: num(f[4])!, updated_at: num(f[5])!, pending_approvals: num(f[6])!, pending_client_calls: num(f[7])!,
          }));
        });
        pending = [];
      };
      for await (const entry of walk(upper, lower)) {
        if (after && entry.updatedAt === after.updatedAt && entry.runId >= after.runId) continue;
        pending.push(entry.runId);
        if (pending.length >= BATCH) await flush();
        if (found.length > limit) break;
      }
      await flush();
      return listPage(found, limit);
    },

    async prune(options) {
      const before = finiteTime('terminalBefore', options?.terminalBefore);
      const candidates: string[] = [];
      for await (const entry of walk(`(${before}`, '-inf')) candidates.push(entry.runId);
      let gone = 0;
      for (let i = 0; i < candidates.length; i += BATCH) {
        const results = await Promise.all(candidates.slice(i, i + BATCH).map((runId) =>
          conn.eval('Pruning runs', PRUNE_ONE, [...runKeyList(k.run(runId)), k.runs], [runId, before])));
        gone += results.filter((r) => r === 1).length;
      }
      return gone;
    },
  };
}

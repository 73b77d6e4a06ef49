/**
 * The PostgreSQL V3 store's half of a forget (docs/forget.md): inside the
 * redact transaction (which holds the blob lock alone), before the packages'
 * content is deleted, every run that points to one of them is rewritten in
 * place (its copies of the package's block become stand-ins; revision and
 * updated_at stay); at a save, a run that points to a redacted package is
 * stored with stand-ins too. The old row versions stay in the table files as
 * dead tuples until VACUUM reclaims them (docs/forget.md says what to run).
 */
import type { PoolClient } from 'pg';
import { RunIdentityError } from '../errors/index.js';
import type { AgentRunLoadOptions } from '../stores/types.js';
import type { AgentRunEnvelopeV3 } from './envelope.js';
import type { CheckedBlob } from './store-blob.js';
import { assembleLoadedV3, type V3StoreMemory } from './store-sql.js';
import {
  recordTargets, rewriteRecordCopies, rewrittenRows, saveMatcher, type RedactedPackage,
} from './forget.js';

export interface PgV3Tables {
  runs: string;
  steps: string;
  messages: string;
  receipts: string;
  blobs: string;
  records: string;
  refs: string;
  forgotten: string;
}

/** Reads one run's rows (the caller's transaction gives them one view) and assembles the record; undefined for none. */
export async function readRunPg(
  client: PoolClient, t: PgV3Tables, runId: string, loadOptions: AgentRunLoadOptions, memory: V3StoreMemory['memory'],
): Promise<AgentRunEnvelopeV3 | undefined> {
  const row = (await client.query<{
    scope: string; revision: number; created_at: number; updated_at: number; context_steps: number | null;
    transcript_digest: Buffer; receipts_digest: Buffer; head: Buffer;
  }>(`SELECT scope, revision, created_at, updated_at, context_steps, transcript_digest, receipts_digest, head FROM ${t.runs} WHERE run_id = $1`,
    [runId])).rows[0];
  if (!row) return undefined;
  if (loadOptions.scope !== undefined && row.scope !== loadOptions.scope) throw new RunIdentityError('scope_mismatch', runId);
  const messages = (await client.query<{ idx: number; body: Buffer; revision: number }>(
    `SELECT idx, body, revision FROM ${t.messages} WHERE run_id = $1 ORDER BY idx`, [runId])).rows;
  const receipts = (await client.query<{ key: string; body: Buffer; revision: number }>(
    `SELECT key, body, revision FROM ${t.receipts} WHERE run_id = $1 ORDER BY key COLLATE "C"`, [runId])).rows;
  const redacted = (await client.query<{ digest: string }>(`SELECT r.digest FROM ${t.refs} r JOIN ${t.blobs} b ON b.digest = r.digest
  WHERE r.run_id = $1 AND b.content IS NULL`, [runId])).rows.map((r) => r.digest);
  const steps = (await client.query<{ body: string }>(`SELECT body FROM ${t.steps} WHERE run_id = $1 ORDER BY idx`, [runId])).rows.map((r) => r.body);
  return assembleLoadedV3(runId, {
    scope: row.scope, revision: row.revision, createdAt: row.created_at, updatedAt: row.updated_at,
    contextSteps: row.context_steps, head: row.head,
    messages: messages.map((m) => ({ index: m.idx, bytes: m.body, revision: m.revision })),
    receipts: receipts.map((r) => ({ key: r.key, bytes: r.body, revision: r.revision })),
    transcriptDigest: row.transcript_digest, receiptsDigest: row.receipts_digest,
    steps, redacted,
  }, loadOptions, memory);
}

/** In the redact transaction, before the content goes: rewrites the runs that point to the packages `records` redact. */
export async function rewriteRunsPg(
  client: PoolClient, t: PgV3Tables, records: readonly { recordId: string; revision: number }[], memories: V3StoreMemory,
): Promise<void> {
  const found = await client.query<{ digest: string; content: string }>(`SELECT DISTINCT b.digest, b.content FROM ${t.blobs} b
  JOIN ${t.records} br ON br.digest = b.digest
  JOIN unnest($1::text[], $2::int[]) AS r(record_id, revision) ON br.record_id = r.record_id AND br.revision = r.revision
  WHERE b.content IS NOT NULL`, [records.map((r) => r.recordId), records.map((r) => r.revision)]);
  if (found.rows.length === 0) return;
  const gone = new Map<string, unknown>(found.rows.map((r) => [r.digest, (JSON.parse(r.content) as { blocks?: unknown }).blocks]));
  const runIds = (await client.query<{ run_id: string }>(`SELECT DISTINCT run_id FROM ${t.refs} WHERE digest = ANY($1::text[]) ORDER BY run_id`,
    [[...gone.keys()]])).rows.map((r) => r.run_id);
  for (const runId of runIds) {
    // The run's row locked first: a one-statement save (which takes no blob lock) waits for the rewrite, then finds its
    // compare-and-swap on the row's digests fails when the rewrite changed them.
    await client.query(`SELECT 1 FROM ${t.runs} WHERE run_id = $1 FOR UPDATE`, [runId]);
    const loaded = await readRunPg(client, t, runId, { saves: true }, memories.memory);
    memories.memory.keep(runId, 'stopped', undefined);
    memories.refMemory.forget(runId);
    memories.stepMemory.forget(runId);
    if (!loaded) continue;
    const { record, rewritten } = rewriteRecordCopies(loaded, recordTargets(loaded.context?.steps, gone));
    if (rewritten === 0) continue;
    const rows = rewrittenRows(record);
    await client.query(`DELETE FROM ${t.messages} WHERE run_id = $1`, [runId]);
    await client.query(`DELETE FROM ${t.receipts} WHERE run_id = $1`, [runId]);
    if (rows.messages.length > 0) {
      await client.query(`INSERT INTO ${t.messages} (run_id, idx, body, revision)
  SELECT $1, m.idx, m.body, m.revision FROM unnest($2::int[], $3::bytea[], $4::int[]) AS m(idx, body, revision)`,
      [runId, rows.messages.map((m) => m.index), rows.messages.map((m) => Buffer.from(m.bytes)), rows.messages.map((m) => m.revision)]);
    }
    if (rows.receipts.length > 0) {
      await client.query(`INSERT INTO ${t.receipts} (run_id, key, model_step, body, revision)
  SELECT $1, r.key, r.model_step, r.body, r.revision FROM unnest($2::text[], $3::int[], $4::bytea[], $5::int[]) AS r(key, model_step, body, revision)`,
      [runId, rows.receipts.map((r) => r.key), rows.receipts.map((r) => r.modelStep), rows.receipts.map((r) => Buffer.from(r.bytes)),
        rows.receipts.map((r) => r.revision)]);
    }
    const next = rows.plan.next;
    // revision and updated_at are left as they are: the run keeps its revision and its last-save time.
    await client.query(`UPDATE ${t.runs} SET head = $2, transcript_length = $3, transcript_digest = $4, receipts_digest = $5 WHERE run_id = $1`,
      [runId, Buffer.from(rows.plan.head), next.index!.length, Buffer.from(next.transcriptDigest), Buffer.from(next.receiptsDigest)]);
  }
}

/**
 * In a save's transaction: the envelope to store, with stand-ins for the copies of the redacted packages it points
 * to (`check`: look all of the envelope's packages up; else only the ones this save carries).
 */
export async function forSavePg(
  client: PoolClient, t: PgV3Tables, envelope: AgentRunEnvelopeV3, digests: readonly string[], incoming: readonly CheckedBlob[], check: boolean,
): Promise<{ envelope: AgentRunEnvelopeV3; rewrote: boolean }> {
  const carried = incoming.filter((b) => b.records.length > 0);
  // A package that holds no memory record is never redacted: only the others are looked up.
  const plain = new Set(incoming.filter((b) => b.records.length === 0).map((b) => b.digest));
  const candidates = check ? digests.filter((d) => !plain.has(d)) : carried.map((b) => b.digest);
  if (candidates.length === 0) return { envelope, rewrote: false };
  const rows = (await client.query<{ digest: string; ids: string[] }>(`SELECT b.digest, array_remove(array_agg(f.record_id), NULL) AS ids
  FROM ${t.blobs} b LEFT JOIN ${t.records} br ON br.digest = b.digest
  LEFT JOIN ${t.forgotten} f ON f.record_id = br.record_id AND f.revision = br.revision
  WHERE b.content IS NULL AND b.digest = ANY($1::text[]) GROUP BY b.digest`, [[...new Set(candidates)]])).rows;
  if (rows.length === 0) return { envelope, rewrote: false };
  const redacted = new Map<string, RedactedPackage>();
  for (const row of rows) {
    const blob = carried.find((b) => b.digest === row.digest);
    redacted.set(row.digest, { ...(blob ? { blocks: (JSON.parse(blob.json) as { blocks?: unknown }).blocks } : {}), forgottenIds: row.ids });
  }
  const { record, rewritten } = rewriteRecordCopies(envelope, saveMatcher(envelope.context?.steps, redacted));
  return { envelope: record, rewrote: rewritten > 0 };
}

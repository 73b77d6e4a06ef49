/**
 * The SQLite V3 store's half of a forget (docs/forget.md): inside the redact
 * transaction, before the packages' content is deleted, every run that points
 * to one of them is rewritten in place (its copies of the package's block
 * become stand-ins; revision and updated_at stay); at a save, a run that
 * points to a redacted package is stored with stand-ins too; after the
 * redaction commits, the WAL is checkpointed and truncated, so with
 * `secure_delete` on no page of the file or of its WAL holds the content.
 */
import type Database from 'better-sqlite3';
import type { AgentRunEnvelopeV3 } from './envelope.js';
import type { CheckedBlob } from './store-blob.js';
import type { V3StoreMemory } from './store-sql.js';
import {
  recordTargets, rewriteRecordCopies, rewrittenRows, saveMatcher, type RedactedPackage,
} from './forget.js';

export interface SqliteForget {
  /** In the redact transaction, before the content goes: rewrites the runs that point to the packages `records` redact. */
  rewriteRuns(records: readonly { recordId: string; revision: number }[]): void;
  /**
   * In a save's transaction: the envelope to store, with stand-ins for the copies of the redacted packages it points
   * to (`check`: look the envelope's packages up; else only the packages this save carries are looked at).
   */
  forSave(envelope: AgentRunEnvelopeV3, digests: readonly string[], incoming: readonly CheckedBlob[], check: boolean): { envelope: AgentRunEnvelopeV3; rewrote: boolean };
  /** After a redaction committed: the WAL's pages are copied into the file and the WAL truncated. */
  checkpoint(): void;
}

/**
 * `loadRun` reads a run (with `saves`) in the caller's transaction; `memories` are the store object's caches of its
 * own saves, forgotten for every run rewritten here.
 */
export function sqliteForget(db: Database.Database, loadRun: (runId: string) => AgentRunEnvelopeV3 | undefined, memories: V3StoreMemory): SqliteForget {
  // Deleted content is overwritten with zeros, not left in free pages (this is the ops store's connection: its deletes too).
  if (!db.readonly) db.pragma('secure_delete = ON');
  const s = {
    toRedact: db.prepare<[string, number], { digest: string; content: string }>(`SELECT b.digest, b.content FROM cairn_runs_v3_blobs b
  JOIN cairn_runs_v3_blob_records r ON r.digest = b.digest WHERE b.content IS NOT NULL AND r.record_id = ? AND r.revision = ?`),
    refRuns: db.prepare<[string], string>('SELECT run_id FROM cairn_runs_v3_blob_refs WHERE digest = ?').pluck(),
    deleteMessages: db.prepare<[string]>('DELETE FROM cairn_runs_v3_messages WHERE run_id = ?'),
    deleteReceipts: db.prepare<[string]>('DELETE FROM cairn_runs_v3_receipts WHERE run_id = ?'),
    putMessage: db.prepare<[string, number, Uint8Array, number]>('INSERT INTO cairn_runs_v3_messages (run_id, idx, body, revision) VALUES (?, ?, ?, ?)'),
    putReceipt: db.prepare<[string, string, number, Uint8Array, number]>(
      'INSERT INTO cairn_runs_v3_receipts (run_id, receipt_key, model_step, body, revision) VALUES (?, ?, ?, ?, ?)'),
    head: db.prepare<[Uint8Array, number, Uint8Array, Uint8Array, string]>(
      'UPDATE cairn_runs_v3 SET head = ?, transcript_length = ?, transcript_digest = ?, receipts_digest = ? WHERE run_id = ?'),
    redactedAmong: db.prepare<[string], string>(
      'SELECT digest FROM cairn_runs_v3_blobs WHERE content IS NULL AND digest IN (SELECT value FROM json_each(?))').pluck(),
    forgottenIds: db.prepare<[string], string>(`SELECT br.record_id FROM cairn_runs_v3_blob_records br
  JOIN cairn_runs_v3_forgotten f ON f.record_id = br.record_id AND f.revision = br.revision WHERE br.digest = ?`).pluck(),
  };

  const forgetMemory = (runId: string) => {
    memories.memory.keep(runId, 'stopped', undefined);
    memories.refMemory.forget(runId);
    memories.stepMemory.forget(runId);
  };

  return {
    rewriteRuns(records) {
      const gone = new Map<string, unknown>();
      for (const r of records) {
        for (const row of s.toRedact.all(r.recordId, r.revision)) gone.set(row.digest, (JSON.parse(row.content) as { blocks?: unknown }).blocks);
      }
      const runIds = new Set<string>();
      for (const digest of gone.keys()) for (const runId of s.refRuns.all(digest)) runIds.add(runId);
      for (const runId of runIds) {
        const loaded = loadRun(runId);
        forgetMemory(runId);
        if (!loaded) continue;
        const { record, rewritten } = rewriteRecordCopies(loaded, recordTargets(loaded.context?.steps, gone));
        if (rewritten === 0) continue;
        const rows = rewrittenRows(record);
        s.deleteMessages.run(runId);
        s.deleteReceipts.run(runId);
        for (const m of rows.messages) s.putMessage.run(runId, m.index, m.bytes, m.revision);
        for (const r of rows.receipts) s.putReceipt.run(runId, r.key, r.modelStep, r.bytes, r.revision);
        const next = rows.plan.next;
        s.head.run(rows.plan.head, next.index!.length, next.transcriptDigest, next.receiptsDigest, runId);
      }
    },

    forSave(envelope, digests, incoming, check) {
      const carried = incoming.filter((b) => b.records.length > 0);
      // A package that holds no memory record is never redacted: only the others are looked up.
      const plain = new Set(incoming.filter((b) => b.records.length === 0).map((b) => b.digest));
      const candidates = check ? digests.filter((d) => !plain.has(d)) : carried.map((b) => b.digest);
      if (candidates.length === 0) return { envelope, rewrote: false };
      const redacted = new Map<string, RedactedPackage>();
      for (const digest of s.redactedAmong.all(JSON.stringify(candidates))) {
        const blob = carried.find((b) => b.digest === digest);
        redacted.set(digest, {
          ...(blob ? { blocks: (JSON.parse(blob.json) as { blocks?: unknown }).blocks } : {}),
          forgottenIds: s.forgottenIds.all(digest),
        });
      }
      if (redacted.size === 0) return { envelope, rewrote: false };
      const { record, rewritten } = rewriteRecordCopies(envelope, saveMatcher(envelope.context?.steps, redacted));
      return { envelope: record, rewrote: rewritten > 0 };
    },

    checkpoint() {
      if (!db.readonly) db.pragma('wal_checkpoint(TRUNCATE)');
    },
  };
}

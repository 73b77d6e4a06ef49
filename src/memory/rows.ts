/**
 * A memory record as a SQL row, for the SQLite and PostgreSQL stores: the
 * scope in its own columns (what a read filters on) and as its canonical key
 * (what dedup is unique on), metadata as JSON text, the embedding's vector as
 * little-endian float64s (exact, and read back without parsing: a search over
 * a scope of 1,000 256-d records spent most of its time in JSON.parse) and its
 * model in a column of its own.
 */
import { StoredRecordError } from '../errors/index.js';
import { operationIdOf } from './records.js';
import { memoryScopeFromKey, memoryScopeKey } from './scope.js';
import type { MemoryRecord, MemoryScope } from './types.js';

export interface MemoryRow {
  id: string;
  scope_key: string;
  user_id: string | null;
  agent_id: string | null;
  chat_id: string | null;
  hash: string;
  text: string;
  metadata: string;
  operation_id: string | null;
  embedding: Uint8Array | null;
  embedding_model: string | null;
  expires_at: number | null;
  created_at: number;
  updated_at: number;
}

/** The columns in the order {@link rowValues} gives them. */
export const MEMORY_COLUMNS = [
  'id', 'scope_key', 'user_id', 'agent_id', 'chat_id', 'hash', 'text', 'metadata', 'operation_id', 'embedding', 'embedding_model', 'expires_at', 'created_at', 'updated_at',
] as const;

export function rowValues(record: MemoryRecord): unknown[] {
  return [
    record.id,
    memoryScopeKey(record.scope),
    record.scope.userId ?? null,
    record.scope.agentId ?? null,
    record.scope.chatId ?? null,
    record.hash,
    record.text,
    JSON.stringify(record.metadata),
    operationIdOf(record) ?? null,
    record.embedding ? encodeVector(record.embedding.vector) : null,
    record.embedding?.model ?? null,
    record.expiresAt ?? null,
    record.createdAt,
    record.updatedAt,
  ];
}

export function fromRow(row: MemoryRow): MemoryRecord {
  try {
    return {
      id: row.id,
      text: row.text,
      hash: row.hash,
      scope: memoryScopeFromKey(row.scope_key),
      metadata: JSON.parse(row.metadata) as MemoryRecord['metadata'],
      ...(row.embedding !== null ? { embedding: { vector: decodeVector(row.embedding), ...(row.embedding_model !== null ? { model: row.embedding_model } : {}) } } : {}),
      ...(row.expires_at !== null ? { expiresAt: Number(row.expires_at) } : {}),
      createdAt: Number(row.created_at),
      updatedAt: Number(row.updated_at),
    };
  } catch (error) {
    throw new StoredRecordError('record_corrupt', row.id, `Memory record ${row.id} cannot be read: ${(error as Error).message}`);
  }
}

/** A vector as the bytes the `embedding` column holds: 8 a number, little-endian. */
export function encodeVector(vector: readonly number[]): Uint8Array {
  const bytes = Buffer.allocUnsafe(vector.length * 8);
  vector.forEach((n, i) => bytes.writeDoubleLE(n, i * 8));
  return bytes;
}

export function decodeVector(column: Uint8Array): number[] {
  if (column.byteLength % 8 !== 0) throw new Error(`an embedding of ${column.byteLength} bytes is not a list of float64s`);
  const bytes = Buffer.isBuffer(column) ? column : Buffer.from(column.buffer, column.byteOffset, column.byteLength);
  const vector = new Array<number>(bytes.byteLength / 8);
  for (let i = 0; i < vector.length; i++) vector[i] = bytes.readDoubleLE(i * 8);
  return vector;
}

/** A WHERE clause matching the records a read of `scope` sees, with its values; `param(i)` writes the i-th placeholder. */
export function scopeWhere(scope: MemoryScope, param: (index: number) => string, first = 1): { sql: string; values: string[] } {
  const parts: string[] = [];
  const values: string[] = [];
  for (const [column, value] of [['user_id', scope.userId], ['agent_id', scope.agentId], ['chat_id', scope.chatId]] as const) {
    if (value === undefined) continue;
    values.push(value);
    parts.push(`${column} = ${param(first + values.length - 1)}`);
  }
  return { sql: parts.join(' AND '), values };
}

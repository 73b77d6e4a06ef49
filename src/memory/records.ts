/**
 * What every memory backend shares: input checks, the content hash, and the
 * decisions of a write (insert, refresh a duplicate, fold an update into the
 * record that already holds its text). A backend reads the rows a decision
 * needs inside its own transaction, asks these functions, and applies the
 * answer, so dedup behaves the same on every backend.
 */
import { createHash } from 'node:crypto';
import { MemoryError } from './errors.js';
import { checkMemoryScope } from './scope.js';
import type {
  MemoryAddInput, MemoryEmbedding, MemoryListInput, MemoryMetadata, MemoryRecord, MemoryScope, MemorySearchInput, MemoryUpdateInput,
} from './types.js';

/**
 * The text a hash is made of: Unicode NFC (so a composed and a decomposed
 * "café" are one fact), whitespace runs collapsed to one space, trimmed.
 * Case is kept: "Tea" and "tea" are two facts to the store.
 */
export function normalizeMemoryText(text: string): string {
  return text.normalize('NFC').replace(/\s+/g, ' ').trim();
}

/** The content hash dedup uses: sha256 (hex) of the normalized text. */
export function memoryContentHash(text: string): string {
  return createHash('sha256').update(normalizeMemoryText(text), 'utf8').digest('hex');
}

const invalid = (message: string) => new MemoryError('memory_record_invalid', message);

function checkString(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw invalid(`${what} must be a non-empty string.`);
  return value;
}

function checkTime(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(`${what} must be a finite number (ms).`);
  return value;
}

/** A deep copy of plain JSON, or a typed refusal (cycles, functions, class instances, non-finite numbers, prototype keys). */
function plainJson(value: unknown, what: string, seen: Set<object> = new Set()): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw invalid(`${what} holds a number that is not finite.`);
    return value;
  }
  if (typeof value !== 'object') throw invalid(`${what} must be plain JSON (found a ${typeof value}).`);
  if (seen.has(value)) throw invalid(`${what} must be plain JSON (found a cycle).`);
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((entry, index) => plainJson(entry, `${what}[${index}]`, seen));
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) throw invalid(`${what} must be plain JSON (found a class instance).`);
    const copy: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      if (key === '__proto__') throw invalid(`${what} may not have a __proto__ key.`);
      const entry = (value as Record<string, unknown>)[key];
      if (entry === undefined) continue;
      copy[key] = plainJson(entry, `${what}.${key}`, seen);
    }
    return copy;
  } finally {
    seen.delete(value);
  }
}

function checkMetadata(value: unknown): MemoryMetadata {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid('metadata must be a plain object.');
  const metadata = plainJson(value, 'metadata') as MemoryMetadata;
  if (metadata.cairn !== undefined) {
    const cairn = metadata.cairn as unknown as Record<string, unknown>;
    if (typeof cairn !== 'object' || cairn === null || typeof cairn.runId !== 'string' || typeof cairn.operationId !== 'string') {
      throw invalid('metadata.cairn must be { runId: string, operationId: string }.');
    }
  }
  return metadata;
}

function checkEmbedding(value: unknown): MemoryEmbedding | undefined {
  if (value === undefined) return undefined;
  const embedding = value as { vector?: unknown; model?: unknown };
  if (typeof value !== 'object' || value === null || !Array.isArray(embedding.vector) || embedding.vector.length === 0
    || !embedding.vector.every((n) => typeof n === 'number' && Number.isFinite(n))) {
    throw invalid('embedding must be { vector: number[] (finite, not empty), model?: string }.');
  }
  if (embedding.model !== undefined && typeof embedding.model !== 'string') throw invalid('embedding.model must be a string.');
  return { vector: [...(embedding.vector as number[])], ...(embedding.model !== undefined ? { model: embedding.model } : {}) };
}

function checkInput(input: unknown, what: string): Record<string, unknown> {
  if (typeof input !== 'object' || input === null) throw invalid(`${what}: expected an object.`);
  return input as Record<string, unknown>;
}

/** A checked `add`: its scope, and the record it would insert. */
export function checkAdd(input: MemoryAddInput): { scope: MemoryScope; record: MemoryRecord } {
  const raw = checkInput(input, 'add');
  const scope = checkMemoryScope(raw.scope, 'memory add');
  const text = checkString(raw.text, 'text');
  const at = checkTime(raw.at, 'at');
  const embedding = checkEmbedding(raw.embedding);
  const record: MemoryRecord = {
    id: checkString(raw.id, 'id'),
    text,
    hash: memoryContentHash(text),
    scope,
    metadata: checkMetadata(raw.metadata),
    ...(embedding ? { embedding } : {}),
    ...(raw.expiresAt !== undefined ? { expiresAt: checkTime(raw.expiresAt, 'expiresAt') } : {}),
    createdAt: at,
    updatedAt: at,
  };
  return { scope, record };
}

export interface CheckedUpdate {
  id: string;
  scope: MemoryScope;
  text: string;
  hash: string;
  metadata?: MemoryMetadata;
  embedding?: MemoryEmbedding;
  expiresAt?: number;
  at: number;
}

export function checkUpdate(input: MemoryUpdateInput): CheckedUpdate {
  const raw = checkInput(input, 'update');
  const scope = checkMemoryScope(raw.scope, 'memory update');
  const text = checkString(raw.text, 'text');
  const embedding = checkEmbedding(raw.embedding);
  return {
    id: checkString(raw.id, 'id'),
    scope,
    text,
    hash: memoryContentHash(text),
    ...(raw.metadata !== undefined ? { metadata: checkMetadata(raw.metadata) } : {}),
    ...(embedding ? { embedding } : {}),
    ...(raw.expiresAt !== undefined ? { expiresAt: checkTime(raw.expiresAt, 'expiresAt') } : {}),
    at: checkTime(raw.at, 'at'),
  };
}

export function checkIdInput(input: { id: string; scope: MemoryScope }, what: string): { id: string; scope: MemoryScope } {
  const raw = checkInput(input, what);
  return { scope: checkMemoryScope(raw.scope, `memory ${what}`), id: checkString(raw.id, 'id') };
}

export function checkList(input: MemoryListInput): { scope: MemoryScope; operationId?: string; limit?: number } {
  const raw = checkInput(input, 'list');
  const scope = checkMemoryScope(raw.scope, 'memory list');
  if (raw.operationId !== undefined) checkString(raw.operationId, 'operationId');
  return { scope, ...(raw.operationId !== undefined ? { operationId: raw.operationId as string } : {}), ...(raw.limit !== undefined ? { limit: checkLimit(raw.limit) } : {}) };
}

function checkLimit(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw invalid('limit must be a whole number >= 1.');
  return value;
}

export interface CheckedSearch {
  scope: MemoryScope;
  query: string;
  embedding?: MemoryEmbedding;
  limit: number;
  now?: number;
}

export function checkSearch(input: MemorySearchInput): CheckedSearch {
  const raw = checkInput(input, 'search');
  const scope = checkMemoryScope(raw.scope, 'memory search');
  if (typeof raw.query !== 'string') throw invalid('query must be a string.');
  const embedding = checkEmbedding(raw.embedding);
  return {
    scope,
    query: raw.query,
    ...(embedding ? { embedding } : {}),
    limit: raw.limit === undefined ? 10 : checkLimit(raw.limit),
    ...(raw.now !== undefined ? { now: checkTime(raw.now, 'now') } : {}),
  };
}

export function checkSweep(input: { scope: MemoryScope; now: number }): { scope: MemoryScope; now: number } {
  const raw = checkInput(input, 'sweep');
  return { scope: checkMemoryScope(raw.scope, 'memory sweep'), now: checkTime(raw.now, 'now') };
}

/** The operation id an extraction stamped on a record, if any. */
export function operationIdOf(record: Pick<MemoryRecord, 'metadata'>): string | undefined {
  return record.metadata.cairn?.operationId;
}

/** What an add does, given the record of its text in its exact scope (by hash) and the record of its id. */
export type AddDecision =
  | { kind: 'insert'; record: MemoryRecord }
  | { kind: 'refresh'; record: MemoryRecord };

export function decideAdd(candidate: MemoryRecord, byHash: MemoryRecord | undefined, byId: MemoryRecord | undefined): AddDecision {
  if (byHash) {
    return {
      kind: 'refresh',
      record: {
        ...byHash,
        metadata: candidate.metadata,
        ...(candidate.embedding ? { embedding: candidate.embedding } : {}),
        ...(candidate.expiresAt !== undefined ? { expiresAt: candidate.expiresAt } : {}),
        updatedAt: candidate.updatedAt,
      },
    };
  }
  if (byId) throw invalid(`memory id ${JSON.stringify(candidate.id)} is already used by another record.`);
  return { kind: 'insert', record: candidate };
}

/**
 * What an update does, given its target (already known to be in the update's
 * scope) and the other record of the target's exact scope holding the new text.
 */
export type UpdateDecision =
  | { kind: 'replace'; record: MemoryRecord }
  | { kind: 'fold'; deleteId: string; record: MemoryRecord };

export function decideUpdate(update: CheckedUpdate, target: MemoryRecord, byHash: MemoryRecord | undefined): UpdateDecision {
  const metadata = update.metadata ?? target.metadata;
  const expiresAt = update.expiresAt ?? target.expiresAt;
  if (byHash && byHash.id !== target.id) {
    return {
      kind: 'fold',
      deleteId: target.id,
      record: {
        ...byHash,
        metadata,
        ...(update.embedding ? { embedding: update.embedding } : {}),
        ...(expiresAt !== undefined ? { expiresAt } : {}),
        updatedAt: update.at,
      },
    };
  }
  const sameText = target.hash === update.hash;
  const { embedding: _old, expiresAt: _oldExpiry, ...rest } = target;
  const embedding = update.embedding ?? (sameText ? target.embedding : undefined);
  return {
    kind: 'replace',
    record: {
      ...rest,
      text: update.text,
      hash: update.hash,
      metadata,
      ...(embedding ? { embedding } : {}),
      ...(expiresAt !== undefined ? { expiresAt } : {}),
      updatedAt: update.at,
    },
  };
}

/** A deep copy, so nothing a caller holds aliases what a store keeps. */
export function copyRecord(record: MemoryRecord): MemoryRecord {
  return structuredClone(record);
}

/** Orders records oldest first: by `createdAt`, then id. */
export function byCreation(a: MemoryRecord, b: MemoryRecord): number {
  return a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

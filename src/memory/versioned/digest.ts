/**
 * The requests a memory session commits, checked and reduced to the fields
 * that say what was asked, and their digests: `sha256:` of the canonical
 * JSON of that reduced request. A commit replayed under its operation id
 * must bring the same digest (the store compares them), so only what the
 * caller asked goes in, never what the session made up (record ids, times).
 */
import { digestOf } from '../../agent/digest.js';
import { InvalidOptionsError } from '../../errors/index.js';
import type { MemoryExtractionMessage, MemoryExtractionRequest, VersionedMemorySource } from './types.js';

/** A write a person or a tool asked for, as its digest sees it. */
export type MemoryWriteRequest =
  | { op: 'remember'; text: string; sources: VersionedMemorySource[] }
  | { op: 'revise'; id: string; text: string }
  | { op: 'retract'; id: string };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A non-empty string (after trimming), or InvalidOptionsError naming `where`. */
export function checkText(value: unknown, where: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw new InvalidOptionsError(`${where} must be a non-empty string.`);
  return value;
}

/** An optional operation id: undefined, or a non-empty string. */
export function checkOperationId(value: unknown, where: string): string | undefined {
  return value === undefined ? undefined : checkText(value, where);
}

/** A list of `{ messageId }` (copies, own fields only). */
export function checkSources(value: unknown, where: string): VersionedMemorySource[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new InvalidOptionsError(`${where} must be a list of { messageId }.`);
  return value.map((source, i) => {
    if (!isObject(source)) throw new InvalidOptionsError(`${where}[${i}] must be { messageId }.`);
    return { messageId: checkText(source.messageId, `${where}[${i}].messageId`) };
  });
}

/** An extraction request, checked, as a clean copy (the fields the digest covers, nothing else). */
export function checkExtractionRequest(request: unknown): MemoryExtractionRequest {
  if (!isObject(request)) throw new InvalidOptionsError('extract: the request must be { operationId, runId, messages }.');
  const operationId = checkText(request.operationId, 'extract: request.operationId');
  const runId = checkText(request.runId, 'extract: request.runId');
  if (!Array.isArray(request.messages)) throw new InvalidOptionsError('extract: request.messages must be a list of { id, role, text }.');
  const ids = new Set<string>();
  const messages = request.messages.map((message: unknown, i): MemoryExtractionMessage => {
    const where = `extract: request.messages[${i}]`;
    if (!isObject(message)) throw new InvalidOptionsError(`${where} must be { id, role, text }.`);
    const id = checkText(message.id, `${where}.id`);
    if (ids.has(id)) throw new InvalidOptionsError(`${where}.id ${JSON.stringify(id)} names an earlier message too.`);
    ids.add(id);
    if (message.role !== 'user' && message.role !== 'assistant') throw new InvalidOptionsError(`${where}.role must be 'user' or 'assistant'.`);
    if (typeof message.text !== 'string') throw new InvalidOptionsError(`${where}.text must be a string.`);
    return { id, role: message.role, text: message.text };
  });
  return { operationId, runId, messages };
}

/** The digest of an extraction request (what a run's intent saves and the receipt carries): of `{ operationId, runId, messages: [{ id, role, text }] }`. */
export function extractionDigest(request: MemoryExtractionRequest): string {
  return digestOf(checkExtractionRequest(request));
}

/** The digest of a write a person or a tool asked for: of `{ op, ... }` (its `op` keeps a remember and a revise apart). */
export function writeDigest(request: MemoryWriteRequest): string {
  return digestOf(request);
}

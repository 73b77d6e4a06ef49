/**
 * Where the Redis store keeps what. Every key starts with the store's prefix;
 * a key's kind comes before the id it is for, so no id (whatever colons it
 * holds) can name another kind's key.
 *
 *   <p>r:h:<run>    hash: the run's head bytes, summary fields, digests, revision
 *   <p>r:m:<run>    list: the transcript parts, in order (appended to)
 *   <p>r:mr:<run>   list: the revision that wrote each transcript part
 *   <p>r:r:<run>    hash: receipt key -> receipt part bytes
 *   <p>r:rs:<run>   hash: receipt key -> its model step
 *   <p>r:rr:<run>   hash: receipt key -> the revision that wrote it
 *   <p>runs         sorted set: run ids by updatedAt (list and prune)
 *   <p>l:<key>      hash: a lease (owner, token, exp, drain); kept after expiry
 *   <p>breakers     hash: breaker key -> its state (JSON)
 *   <p>j:h:<id>     hash: a journal stream's head (last, ended, scope, updated)
 *   <p>j:f:<id>     list: its frames, seq n at index n - 1
 *   <p>journals     sorted set: stream ids by updatedAt (retention, prune)
 *   <p>b:e:<name>   hash: a budget ledger's entries, id -> JSON
 *   <p>b:v:<name>   a counter bumped by every write to the ledger
 */
import { InvalidOptionsError } from '../../errors/index.js';

export const DEFAULT_PREFIX = 'cairn:';

export function checkPrefix(prefix: unknown): string {
  if (prefix === undefined) return DEFAULT_PREFIX;
  if (typeof prefix !== 'string' || prefix.length > 200 || /[\s\0]/.test(prefix)) {
    throw new InvalidOptionsError(`createRedisOpsStore: keyPrefix must be a string of at most 200 characters without spaces, got ${JSON.stringify(prefix)}.`);
  }
  return prefix;
}

export interface RunKeys {
  head: string;
  messages: string;
  messageRevisions: string;
  receipts: string;
  receiptSteps: string;
  receiptRevisions: string;
}

export function keys(prefix: string) {
  return {
    run(runId: string): RunKeys {
      return {
        head: `${prefix}r:h:${runId}`,
        messages: `${prefix}r:m:${runId}`,
        messageRevisions: `${prefix}r:mr:${runId}`,
        receipts: `${prefix}r:r:${runId}`,
        receiptSteps: `${prefix}r:rs:${runId}`,
        receiptRevisions: `${prefix}r:rr:${runId}`,
      };
    },
    runs: `${prefix}runs`,
    lease: (key: string) => `${prefix}l:${key}`,
    breakers: `${prefix}breakers`,
    stream: (id: string) => `${prefix}j:h:${id}`,
    frames: (id: string) => `${prefix}j:f:${id}`,
    journals: `${prefix}journals`,
    /** The key prefixes of one stream, so a sweep in Lua can name a stream's keys from its id. */
    streamPrefix: `${prefix}j:h:`,
    framesPrefix: `${prefix}j:f:`,
    ledgerEntries: (name: string) => `${prefix}b:e:${name}`,
    ledgerVersion: (name: string) => `${prefix}b:v:${name}`,
  };
}

export type Keys = ReturnType<typeof keys>;

/** A run's keys in the order the scripts take them. */
export const runKeyList = (k: RunKeys) => [k.head, k.messages, k.messageRevisions, k.receipts, k.receiptSteps, k.receiptRevisions];

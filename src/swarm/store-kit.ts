/**
 * What the three swarm stores share: the checks of what they are given, and
 * the errors they refuse with, so each backend refuses alike.
 */
import { InvalidOptionsError, RevisionConflictError, RunIdentityError } from '../errors/index.js';
import type { AgentRunEnvelope } from '../agent/types.js';
import { ID } from './dag.js';
import type { BlackboardWrite, SwarmJournalEventInput, SwarmRecord } from './types.js';

export const DEFAULT_JOURNAL_LIMIT = 1000;

export function checkId(value: unknown, what: string): string {
  if (typeof value !== 'string' || !ID.test(value)) throw new InvalidOptionsError(`${what} must match ${ID}, got ${JSON.stringify(value)}.`);
  return value;
}

export function checkRecord(record: SwarmRecord): void {
  if (!record || typeof record !== 'object' || record.kind !== 'cairn-swarm') throw new InvalidOptionsError('saveSwarm takes a swarm record (kind cairn-swarm).');
  checkId(record.swarmId, 'record.swarmId');
  if (typeof record.scope !== 'string' || record.scope === '') throw new InvalidOptionsError('record.scope must be a non-empty string.');
  if (!Number.isInteger(record.revision) || record.revision < 1) throw new InvalidOptionsError('record.revision must be a whole number of at least 1.');
  if (!record.tasks || typeof record.tasks !== 'object') throw new InvalidOptionsError('record.tasks must be an object.');
}

export function checkEvents(events: SwarmJournalEventInput[]): void {
  if (!Array.isArray(events) || !events.every((e) => e && typeof e.type === 'string' && (e.type as string) !== '')) {
    throw new InvalidOptionsError('saveSwarm takes an array of journal events, each with a type.');
  }
}

export function checkWrite(write: BlackboardWrite): void {
  if (!write || typeof write.key !== 'string' || write.key === '' || write.key.length > 200) throw new InvalidOptionsError('A blackboard key must be a string of 1 to 200 characters.');
  if (typeof write.writeId !== 'string' || write.writeId === '') throw new InvalidOptionsError('A blackboard write needs its writeId.');
  if (typeof write.taskId !== 'string') throw new InvalidOptionsError('A blackboard write needs its taskId.');
  if (write.value === undefined) throw new InvalidOptionsError('A blackboard value must be JSON (undefined is not).');
}

export function checkJournalRange(options: { after?: number; limit?: number } = {}): { after: number; limit: number } {
  const after = options.after ?? 0;
  const limit = options.limit ?? DEFAULT_JOURNAL_LIMIT;
  if (!Number.isInteger(after) || after < 0) throw new InvalidOptionsError('readJournal: after must be a whole number of at least 0.');
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new InvalidOptionsError('readJournal: limit must be a whole number from 1 to 10000.');
  return { after, limit };
}

export const conflict = (swarmId: string, record: SwarmRecord, stored: number | null) => new RevisionConflictError(swarmId, record.revision - 1, stored);

export const scopeMismatch = (id: string) => new RunIdentityError('scope_mismatch', id);

export function checkEnvelopeArg(envelope: AgentRunEnvelope): void {
  if (!envelope || typeof envelope !== 'object' || typeof envelope.runId !== 'string' || !Number.isInteger(envelope.revision)) {
    throw new InvalidOptionsError('save takes an agent run envelope (runId, revision).');
  }
}

/** A copy as JSON carries it: what a durable store would hand back. */
export const jsonClone = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

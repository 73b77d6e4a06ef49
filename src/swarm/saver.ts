/**
 * The swarm's saves, with retries. A step's record and journal events are
 * saved before anything the step decided takes effect; a save that fails is
 * tried again a few times (a store that blinked should not stop a DAG), and
 * the events of a step whose save failed go with the next attempt. A retry
 * refused for its revision checks whether the failed attempt landed after
 * all (a commit whose answer was lost): then it counts as saved.
 */
import { RevisionConflictError, serializeError, type SerializedError } from '../errors/index.js';
import type { SwarmJournalEventInput, SwarmRecord, SwarmStore } from './types.js';

/** Attempts of one save before the leg gives up, and the pause before the first retry (doubled each time). */
export const SAVE_ATTEMPTS = 5;
export const RETRY_PAUSE_MS = 10;

export const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class SwarmSaver {
  private unsaved: SwarmJournalEventInput[] = [];
  /** The last error of a save that never landed; the leg stops saving once it is set. */
  failed: SerializedError | null = null;

  constructor(private readonly store: SwarmStore, public revision: number) {}

  /** Saves `record` (at the next revision) with the pending events and `events`. False once the store keeps failing. */
  async save(make: (revision: number) => SwarmRecord, events: SwarmJournalEventInput[]): Promise<boolean> {
    if (this.failed) return false;
    this.unsaved.push(...events);
    const record = make(this.revision + 1);
    let lastError: unknown;
    for (let attempt = 0; attempt < SAVE_ATTEMPTS; attempt += 1) {
      if (attempt > 0) await pause(RETRY_PAUSE_MS * 2 ** (attempt - 1));
      try {
        await this.store.saveSwarm(record, this.unsaved);
        return this.saved();
      } catch (error) {
        lastError = error;
        if (attempt > 0 && RevisionConflictError.isInstance(error) && (await this.landed(record))) return this.saved();
        if (RevisionConflictError.isInstance(error) && attempt === 0) {
          // Another leg moved the swarm: this one must not write over it.
          break;
        }
      }
    }
    this.failed = serializeError(lastError);
    return false;
  }

  private saved(): true {
    this.revision += 1;
    this.unsaved = [];
    return true;
  }

  private async landed(record: SwarmRecord): Promise<boolean> {
    const stored = await this.store.loadSwarm(record.swarmId, { scope: record.scope }).catch(() => undefined);
    return stored?.revision === record.revision && JSON.stringify(stored.snapshot) === JSON.stringify(record.snapshot);
  }
}

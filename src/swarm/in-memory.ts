/**
 * The in-memory swarm store: for tests and demos, nothing survives the
 * process. It keeps JSON copies (a caller's later changes cannot reach them)
 * and fences writes as the durable stores do: a record's revision, a task
 * run's revision, a blackboard write's id.
 */
import { PersistenceError, RevisionConflictError } from '../errors/index.js';
import type { AgentRunEnvelope, AgentRunStore } from '../agent/types.js';
import {
  checkEnvelopeArg, checkEvents, checkId, checkJournalRange, checkRecord, checkWrite, conflict, jsonClone, scopeMismatch,
} from './store-kit.js';
import type { BlackboardEntry, SwarmJournalEvent, SwarmRecord, SwarmStore } from './types.js';

interface Swarm {
  record: SwarmRecord;
  journal: SwarmJournalEvent[];
  writes: Map<string, BlackboardEntry>;
  board: Map<string, BlackboardEntry>;
}

interface TaskRow {
  swarmId: string;
  taskId: string;
  scope: string;
  status: string;
  envelope: AgentRunEnvelope | null;
}

/**
 * @example
 * ```ts
 * const store = createInMemorySwarmStore();
 * await runAgentGroup({ session: { store, swarmId: 's1', scope: 'tenant-a' }, tasks });
 * console.log(await store.readJournal('s1'));
 * ```
 */
export function createInMemorySwarmStore(): SwarmStore {
  const swarms = new Map<string, Swarm>();
  const tasks = new Map<string, TaskRow>();

  const runs: AgentRunStore = {
    async load(runId, options) {
      const row = tasks.get(runId);
      if (!row?.envelope) return undefined;
      if (options?.scope !== undefined && options.scope !== row.scope) throw scopeMismatch(runId);
      return jsonClone(row.envelope);
    },
    async save(envelope) {
      checkEnvelopeArg(envelope);
      const row = tasks.get(envelope.runId);
      if (!row) throw new PersistenceError(`Run ${envelope.runId} is not a task of a swarm in this store; a swarm's store keeps its tasks' runs only.`);
      if (envelope.scope !== row.scope) throw scopeMismatch(envelope.runId);
      const stored = row.envelope?.revision ?? 0;
      if (envelope.revision !== stored + 1) throw new RevisionConflictError(envelope.runId, envelope.revision - 1, row.envelope ? stored : null);
      row.envelope = jsonClone(envelope);
    },
  };

  return {
    runs,
    async loadSwarm(swarmId, options) {
      checkId(swarmId, 'swarmId');
      const swarm = swarms.get(swarmId);
      if (!swarm) return undefined;
      if (swarm.record.scope !== options?.scope) throw scopeMismatch(swarmId);
      return jsonClone(swarm.record);
    },
    async saveSwarm(record, events) {
      checkRecord(record);
      checkEvents(events);
      const copy = jsonClone(record);
      const eventsCopy = jsonClone(events);
      const swarm = swarms.get(record.swarmId);
      if (swarm && swarm.record.scope !== record.scope) throw scopeMismatch(record.swarmId);
      const stored = swarm?.record.revision ?? 0;
      if (record.revision !== stored + 1) throw conflict(record.swarmId, record, swarm ? stored : null);
      for (const task of Object.values(copy.tasks)) {
        const row = tasks.get(task.runId);
        if (row && row.swarmId !== record.swarmId) throw new PersistenceError(`Run ${task.runId} belongs to another swarm.`);
      }
      const target: Swarm = swarm ?? { record: copy, journal: [], writes: new Map(), board: new Map() };
      target.record = copy;
      swarms.set(record.swarmId, target);
      for (const [taskId, task] of Object.entries(copy.tasks)) {
        const row = tasks.get(task.runId);
        if (row) row.status = task.status;
        else tasks.set(task.runId, { swarmId: record.swarmId, taskId, scope: record.scope, status: task.status, envelope: null });
      }
      const appended: SwarmJournalEvent[] = eventsCopy.map((e, i) => ({ ...e, swarmId: record.swarmId, seq: target.journal.length + i + 1, at: record.updatedAt }));
      target.journal.push(...appended);
      return jsonClone(appended);
    },
    async readJournal(swarmId, options) {
      checkId(swarmId, 'swarmId');
      const { after, limit } = checkJournalRange(options);
      return jsonClone((swarms.get(swarmId)?.journal ?? []).filter((e) => e.seq > after).slice(0, limit));
    },
    async writeBlackboard(swarmId, write) {
      checkId(swarmId, 'swarmId');
      checkWrite(write);
      const swarm = swarms.get(swarmId);
      if (!swarm) throw new PersistenceError(`No swarm ${swarmId} in this store: a blackboard belongs to a saved swarm.`);
      const done = swarm.writes.get(write.writeId);
      if (done) return { applied: false, entry: jsonClone(done) };
      const entry: BlackboardEntry = {
        key: write.key, value: jsonClone(write.value), taskId: write.taskId, writeId: write.writeId,
        version: (swarm.board.get(write.key)?.version ?? 0) + 1, at: write.at,
      };
      swarm.writes.set(write.writeId, entry);
      swarm.board.set(write.key, entry);
      swarm.journal.push({ type: 'blackboard-written', taskId: write.taskId, data: { key: write.key, version: entry.version, writeId: write.writeId }, swarmId, seq: swarm.journal.length + 1, at: write.at });
      return { applied: true, entry: jsonClone(entry) };
    },
    async readBlackboard(swarmId, key) {
      checkId(swarmId, 'swarmId');
      const board = swarms.get(swarmId)?.board ?? new Map<string, BlackboardEntry>();
      const entries = [...board.values()].filter((e) => key === undefined || e.key === key).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      return jsonClone(entries);
    },
  };
}

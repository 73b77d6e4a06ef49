/**
 * For the `cairn` commands that read a SQLite store (inspect, chart, check):
 * a run id names a run of the ops run store or of the V3 store in the same
 * file, never both (the V3 tables are their own), so each command looks in
 * the first, then the second.
 */
import type { AgentRunStore } from '../stores/types.js';
import type { SqliteOpsStore } from '../stores/sqlite/index.js';
import { createSqliteAgentRunStoreV3 } from './sqlite.js';
import type { AgentRunStoreV3 } from './store-types.js';

/** The V3 store in the ops store's file (read-only when the ops store is). */
export function v3StoreOf(ops: SqliteOpsStore): AgentRunStoreV3 {
  return createSqliteAgentRunStoreV3(ops);
}

/** The store in the file that holds `runId` (the ops run store first), or undefined when neither does. */
export async function storeHolding(ops: SqliteOpsStore, runId: string): Promise<AgentRunStore | AgentRunStoreV3 | undefined> {
  if ((await ops.agentRuns.load(runId)) !== undefined) return ops.agentRuns;
  const v3 = v3StoreOf(ops);
  return (await v3.load(runId)) !== undefined ? v3 : undefined;
}

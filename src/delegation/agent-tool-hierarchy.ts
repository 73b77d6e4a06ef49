/**
 * The hierarchy of sub-agent runs as a record shows it: the run that started
 * this one (`binding.parent`), and the child runs its sub-agent calls started
 * (each receipt's `child.runId`, and the open calls'). Read by describeRun and
 * inspectRun. (Internal to Cairn.)
 */
import type { AgentRunEnvelope } from '../agent/types.js';

export interface RunHierarchy {
  /** The run whose sub-agent call started this one; null for a top-level run. */
  parentRunId: string | null;
  /** The child runs this run's sub-agent calls started, by call. */
  childRuns: { runId: string; toolCallId: string; toolName: string; modelStep: number }[];
}

export function hierarchyOf(record: AgentRunEnvelope): RunHierarchy {
  const childRuns: RunHierarchy['childRuns'] = [];
  const seen = new Set<string>();
  const add = (r: { child?: { runId?: string }; toolCallId: string; toolName: string; modelStep: number } | null | undefined) => {
    const runId = r?.child?.runId;
    if (!r || typeof runId !== 'string' || runId === '' || seen.has(runId)) return;
    seen.add(runId);
    childRuns.push({ runId, toolCallId: r.toolCallId, toolName: r.toolName, modelStep: r.modelStep });
  };
  for (const receipt of Object.values(record.receipts ?? {})) add(receipt);
  childRuns.sort((a, b) => a.modelStep - b.modelStep || (a.toolCallId < b.toolCallId ? -1 : a.toolCallId > b.toolCallId ? 1 : 0));
  return { parentRunId: record.binding?.parent?.runId ?? null, childRuns };
}

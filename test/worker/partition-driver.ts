/**
 * The person at the other end of the partition test's runs: approves each
 * run that suspends for its approval, and settles each run that stopped on
 * an interrupted call by what the effects table says (the effect is there:
 * reconciled with its result; it is not: run again). It learns of both from
 * the workers' job-end lines, and from a sweep of the store for what a line
 * lost with a killed worker would have said.
 */
import type pg from 'pg';
import { agentRunLeaseKey, type AgentRunEnvelope } from 'cairn/agent';
import type { PostgresOpsStore } from 'cairn/ops/postgres';
import type { WorkQueue } from 'cairn/worker';
import { effectKey } from './fixture.js';

export interface DriverFigures {
  approved: number;
  reconciled: number;
  retried: number;
}

export interface Driver {
  figures: DriverFigures;
  /** A job-end line for a run (from any worker). */
  onJobEnd(runId: string, status: unknown): void;
  /** Looks at every run not yet completed; acts where a line may have been lost. */
  sweep(runIds: string[]): Promise<void>;
  /** Errors met while acting (each would fail the test). */
  errors: string[];
}

export function createDriver(o: { ops: PostgresOpsStore; queue: WorkQueue; pool: pg.Pool; effectsSchema: string; queueSchema: string; scope: string; agentOf: (runId: string) => string }): Driver {
  const figures: DriverFigures = { approved: 0, reconciled: 0, retried: 0 };
  const errors: string[] = [];
  /** run -> the revision last acted on, so one state is answered once. */
  const acted = new Map<string, number>();
  const busy = new Set<string>();

  const effectExists = async (key: string) =>
    ((await o.pool.query(`SELECT 1 FROM "${o.effectsSchema}".effects WHERE key = $1`, [key])).rowCount ?? 0) > 0;

  const queued = async (runId: string) =>
    ((await o.pool.query(`SELECT 1 FROM "${o.queueSchema}"._private_jobs WHERE payload->>'runId' = $1`, [runId])).rowCount ?? 0) > 0;

  async function act(runId: string, record: AgentRunEnvelope): Promise<void> {
    if (acted.get(runId) === record.revision) return;
    const agent = o.agentOf(runId);
    if (record.status === 'suspended' && record.pendingApprovals.length > 0) {
      acted.set(runId, record.revision);
      figures.approved++;
      await o.queue.enqueueResume({
        agent, runId, scope: o.scope,
        answers: { approvalResponses: record.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true })) },
      });
      return;
    }
    const open = Object.values(record.receipts).filter((r) => r.status === 'executing');
    if (record.status !== 'running' || open.length === 0) return;
    // Settled only when nobody drives the run: no live lease and no job for it.
    if ((await o.ops.leases.inspect(agentRunLeaseKey({ runId, scope: o.scope }))) !== null) return;
    if (await queued(runId)) return;
    acted.set(runId, record.revision);
    const retryToolCallIds: string[] = [];
    const reconciledToolResults: { toolCallId: string; output: string }[] = [];
    for (const receipt of open) {
      if (await effectExists(effectKey(runId, receipt.modelStep, receipt.toolCallId))) {
        reconciledToolResults.push({ toolCallId: receipt.toolCallId, output: `did ${receipt.toolCallId}` });
        figures.reconciled++;
      } else {
        retryToolCallIds.push(receipt.toolCallId);
        figures.retried++;
      }
    }
    await o.queue.enqueueResume({ agent, runId, scope: o.scope, answers: { retryToolCallIds, reconciledToolResults } });
  }

  async function look(runId: string): Promise<void> {
    if (busy.has(runId)) return;
    busy.add(runId);
    try {
      const record = await o.ops.agentRuns.load(runId, { scope: o.scope });
      if (record) await act(runId, record);
    } catch (error) {
      errors.push(`${runId}: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      busy.delete(runId);
    }
  }

  return {
    figures, errors,
    onJobEnd(runId, status) {
      if (status === 'suspended' || status === 'stopped') void look(runId);
    },
    async sweep(runIds) {
      const { rows } = await o.pool.query(
        `SELECT run_id FROM "${o.ops.schema}".cairn_runs WHERE run_id = ANY($1::text[]) AND status IN ('suspended', 'running')`, [runIds]);
      for (const row of rows as { run_id: string }[]) await look(row.run_id);
    },
  };
}

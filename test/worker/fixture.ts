/**
 * The agents the worker tests run, in process and in child processes alike.
 * Their model answers from the conversation (so it fits any leg), and their
 * tools' effects are rows in a PostgreSQL table of the test: one row per time
 * an effect happened, written only while the leg's lease (key, owner, token)
 * is still the live one, checked in the same statement. So a count of rows
 * per call identity is the count of effects, whoever ran them.
 */
import pg from 'pg';
import type { AgentTools } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';
import type { WorkerAgent, WorkerJobContext } from 'cairn/worker';

export interface FixtureOptions {
  /** Where the effects table lives (created by {@link createEffectsTable}). */
  effectsSchema: string;
  /** The ops store's schema: its cairn_leases table fences the effects. */
  opsSchema: string;
  pool: pg.Pool;
  /** Who ran an effect (a worker's name), recorded with it. */
  by: string;
  /** How long each tool waits before its effect. @default 0 */
  toolDelayMs?: number;
  /** Called inside the tool, before its effect (a test's trap). */
  onTool?: (job: WorkerJobContext, toolCallId: string) => void | Promise<void>;
}

export async function createEffectsTable(pool: pg.Pool, schema: string): Promise<void> {
  await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  await pool.query(`CREATE TABLE IF NOT EXISTS "${schema}".effects (
    key text NOT NULL, run_id text NOT NULL, by_worker text NOT NULL, token bigint NOT NULL, at timestamptz NOT NULL DEFAULT now())`);
  await pool.query(`CREATE TABLE IF NOT EXISTS "${schema}".acks (
    run_id text NOT NULL, revision integer NOT NULL, by_worker text NOT NULL)`);
}

/** The identity of a call: the run, the model step and the call id. */
export const effectKey = (runId: string, modelStep: number, toolCallId: string) => `${runId}@${modelStep}:${toolCallId}`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Writes one effect row if and only if the lease is still this leg's, holding the lease row while it writes. */
async function fencedEffect(o: FixtureOptions, job: WorkerJobContext, key: string): Promise<boolean> {
  const { rowCount } = await o.pool.query(`
    WITH live AS (
      SELECT 1 FROM "${o.opsSchema}".cairn_leases
      WHERE key = $1 AND owner = $2 AND token = $3::bigint AND expires_at > now() FOR SHARE
    )
    INSERT INTO "${o.effectsSchema}".effects (key, run_id, by_worker, token) SELECT $4, $5, $6, $3::bigint FROM live`,
  [job.lease.key, job.lease.owner, job.lease.token, key, job.runId, o.by]);
  return rowCount === 1;
}

function tools(o: FixtureOptions, job: WorkerJobContext): AgentTools {
  const effect = async (_args: unknown, ctx: { toolCallId: string; modelStep: number }) => {
    if (o.toolDelayMs) await sleep(o.toolDelayMs);
    await o.onTool?.(job, ctx.toolCallId);
    if (!(await fencedEffect(o, job, effectKey(job.runId, ctx.modelStep, ctx.toolCallId)))) {
      throw new Error('This leg no longer holds the run: the effect was not made.');
    }
    return `did ${ctx.toolCallId}`;
  };
  return {
    step: { parameters: { type: 'object' }, execute: effect },
    publish: { parameters: { type: 'object' }, needsApproval: true, execute: effect },
  };
}

/**
 * `chain`: two tool steps (s0, s1), then `done <runId>`.
 * `gate`: one approved step (p0), then `published <runId>`.
 */
export function fixtureAgents(o: FixtureOptions): Record<string, WorkerAgent> {
  const agent = (plan: { tool: string; id: string }[], final: string): WorkerAgent => (job) => ({
    model: createMockModel({
      strict: false,
      responses: [
        (request) => {
          const done = request.messages.filter((m) => m.role === 'tool').length;
          const next = plan[done];
          return next ? { toolCalls: [{ toolName: next.tool, toolCallId: next.id, args: {} }] } : { text: `${final} ${job.runId}` };
        },
      ],
    }),
    bindingId: `fixture-${final}`,
    tools: tools(o, job),
  });
  return {
    chain: agent([{ tool: 'step', id: 's0' }, { tool: 'step', id: 's1' }], 'done'),
    gate: agent([{ tool: 'publish', id: 'p0' }], 'published'),
  };
}

/** Effects that happened more than once, by call identity. */
export async function duplicateEffects(pool: pg.Pool, schema: string): Promise<{ key: string; n: number }[]> {
  const { rows } = await pool.query(`SELECT key, count(*)::int AS n FROM "${schema}".effects GROUP BY key HAVING count(*) > 1`);
  return rows as { key: string; n: number }[];
}

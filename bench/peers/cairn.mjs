/**
 * The Cairn side of the peer bench: the per-step loop is bench/tool-loop.ts's
 * toolLoop (the scripted model that only answers); the resume run is the same
 * loop with a `deploy` tool that needs approval after the last step.
 */
import { resumeAgent, runAgent } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createPostgresOpsStore } from 'cairn/ops/postgres';
import { toolLoop } from '../tool-loop.js';

const PAD = 'x'.repeat(200);
const SCOPE = 'bench';
const USAGE = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };

/** One loop of `steps` steps and the answer, as a new run. */
export async function cairnLoop(store, runId, steps) {
  const result = await toolLoop(store, runId, steps, 'bare');
  if (result.status !== 'completed' || result.messages.length < 2 * steps + 2) throw new Error(`cairn: the loop ended ${result.status}`);
}

/**
 * The model of the resume run, from the last message alone: c0 .. c<steps-1>,
 * then `deploy`, then the answer (what tool-loop.ts's model does, plus the
 * deploy call).
 */
function deployModel(steps) {
  return {
    specificationVersion: 'cairn-model-1',
    provider: 'bench',
    modelId: 'peers',
    async doGenerate(request) {
      const last = request.messages[request.messages.length - 1];
      const id = last?.role === 'tool' ? last.toolCallId : undefined;
      if (id === 'deploy') return { text: 'done', toolCalls: [], finishReason: 'stop', usage: { ...USAGE } };
      const next = id === undefined ? 0 : Number(id.slice(1)) + 1;
      const call = next < steps ? { toolCallId: `c${next}`, toolName: 'step', args: { n: next } } : { toolCallId: 'deploy', toolName: 'deploy', args: {} };
      return { text: '', toolCalls: [call], finishReason: 'tool-calls', usage: { ...USAGE } };
    },
  };
}

export const cairnDeployed = { count: 0 };

/** The options a resume run starts and resumes with (a resume must be passed the same ones). */
function deployOptions(store, runId, steps) {
  return {
    model: deployModel(steps),
    prompt: 'Loop.',
    bindingId: 'bench-peers',
    maxSteps: steps + 3,
    session: { store, runId, scope: SCOPE },
    tools: {
      step: { parameters: { type: 'object' }, execute: (args) => ({ ok: true, n: args.n, pad: PAD }) },
      deploy: {
        parameters: { type: 'object' },
        needsApproval: true,
        execute: () => {
          cairnDeployed.count++;
          return 'deployed';
        },
      },
    },
  };
}

/** Runs `steps` steps and the deploy call, which suspends the run on its approval. Returns the verdict to resume with. */
export async function cairnSuspend(store, runId, steps) {
  const result = await runAgent(deployOptions(store, runId, steps));
  if (result.status !== 'suspended' || result.pendingApprovals.length !== 1) throw new Error(`cairn: the run ended ${result.status}, not suspended on one approval`);
  const [request] = result.pendingApprovals;
  return [{ approvalId: request.approvalId, token: request.token, approved: true }];
}

/** Resumes a suspended run with its verdict: deploy runs, the model answers, the run completes. */
export async function cairnResume(store, runId, steps, approvalResponses) {
  const result = await resumeAgent({ ...deployOptions(store, runId, steps), approvalResponses });
  if (result.status !== 'completed' || result.text !== 'done') throw new Error(`cairn: the resume ended ${result.status}`);
}

/** Cairn's SQLite ops store on its own connection to `path` (WAL, synchronous=FULL: the store's default, said here). */
export function openCairnSqlite(path) {
  const ops = createSqliteOpsStore({ path, synchronous: 'full' });
  return { store: ops.agentRuns, close: () => ops.close() };
}

/** Cairn's PostgreSQL ops store over `pool` in `schema` (setup() creates both when missing). */
export function cairnPostgres(pool, schema) {
  const ops = createPostgresOpsStore({ pool }, { schema });
  return { store: ops.agentRuns, setup: () => ops.setup(), close: () => ops.close() };
}

/**
 * One process of the restart tests: an Agent whose `charge` tool appends one
 * line per run to an effects file, on a SQLite or PostgreSQL run store, with
 * its model behind the local Responses server. `hangIn: 'tool'` makes the
 * tool hang after it began (the parent kills the process mid-effect). Prints
 * the result as one JSON line.
 */
import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import { Agent, tool } from 'cairn';
import type { AgentRunStore } from 'cairn/agent';
import { createOpenAI } from 'cairn/openai';

export interface RestartArgs {
  backend: 'sqlite' | 'postgres';
  path?: string;
  url?: string;
  schema?: string;
  baseURL: string;
  runId: string;
  effects: string;
  hangIn?: 'tool';
  /** Mark the tool replay: 'idempotent'. */
  idempotent?: boolean;
}

async function open(args: RestartArgs): Promise<{ store: AgentRunStore; close(): unknown }> {
  if (args.backend === 'sqlite') {
    const { createSqliteOpsStore } = await import('cairn/ops/sqlite');
    const ops = createSqliteOpsStore({ path: args.path! });
    return { store: ops.agentRuns, close: () => ops.close() };
  }
  const { createPostgresOpsStore } = await import('cairn/ops/postgres');
  const ops = createPostgresOpsStore({ connectionString: args.url! }, { schema: args.schema });
  await ops.setup();
  return { store: ops.agentRuns, close: () => ops.close() };
}

const args = JSON.parse(process.argv[2]!) as RestartArgs;
const opened = await open(args);
const charge = tool({
  name: 'charge',
  schema: z.object({ order: z.string() }),
  execute: async ({ order }, context) => {
    appendFileSync(args.effects, `${JSON.stringify({ order, key: context.idempotencyKey, pid: process.pid })}\n`);
    if (args.hangIn === 'tool') await new Promise(() => undefined);
    return `charged ${order}`;
  },
  ...(args.idempotent ? { replay: 'idempotent' as const } : {}),
});
const agent = new Agent({ model: createOpenAI({ apiKey: 'sk-local', baseURL: args.baseURL })('gpt-6-astra'), maxSteps: 4, tools: { charge } });
const result = await agent.run({ runId: args.runId, store: opened.store, scope: 'tenant-a', prompt: 'Charge order A-1.' });
process.stdout.write(`${JSON.stringify({
  status: result.status, taskOutcome: result.taskOutcome, outputText: result.outputText, revision: result.state.revision,
  reason: result.result.status === 'stopped' ? result.result.reason : undefined,
})}\n`);
await opened.close();

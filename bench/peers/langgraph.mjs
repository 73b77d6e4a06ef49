/**
 * The LangGraph.js side of the peer bench: the same tool loop as Cairn's
 * (bench/tool-loop.ts) as a StateGraph over MessagesAnnotation: an `agent`
 * node calling a scripted chat model, the prebuilt ToolNode running its tool
 * calls, toolsCondition between them, checkpointed by SqliteSaver or
 * PostgresSaver.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { Command, END, interrupt, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { z } from 'zod';

/** The pad each tool result carries: the same 200 bytes as bench/tool-loop.ts. */
const PAD = 'x'.repeat(200);
const USAGE = { input_tokens: 10, output_tokens: 5, total_tokens: 15 };

/**
 * A chat model that only answers, from the last message alone (as Cairn's
 * scripted model does): after the result of call `c<k>` comes `c<k+1>`; after
 * `c<steps-1>` comes the final answer, or, with `withDeploy`, a `deploy` call
 * whose result is followed by the answer.
 */
class ScriptedChatModel extends BaseChatModel {
  constructor(steps, withDeploy) {
    super({});
    this.steps = steps;
    this.withDeploy = withDeploy;
  }

  _llmType() {
    return 'bench-scripted';
  }

  async _generate(messages) {
    const last = messages[messages.length - 1];
    let message;
    if (last?.getType() === 'tool' && last.tool_call_id === 'deploy') {
      message = new AIMessage({ content: 'done', usage_metadata: { ...USAGE } });
    } else {
      const done = last?.getType() === 'tool' ? Number(last.tool_call_id.slice(1)) + 1 : 0;
      const call = done < this.steps
        ? { name: 'step', args: { n: done }, id: `c${done}`, type: 'tool_call' }
        : this.withDeploy ? { name: 'deploy', args: {}, id: 'deploy', type: 'tool_call' } : null;
      message = new AIMessage({ content: call ? '' : 'done', tool_calls: call ? [call] : [], usage_metadata: { ...USAGE } });
    }
    return { generations: [{ text: typeof message.content === 'string' ? message.content : '', message }] };
  }
}

/** `step` returns at once with ~200 bytes (the JSON Cairn stores for its tool's result). */
const stepTool = tool(({ n }) => JSON.stringify({ ok: true, n, pad: PAD }), {
  name: 'step',
  description: 'One step.',
  schema: z.object({ n: z.number() }),
});

/**
 * `deploy` waits for a human verdict with interrupt(): the run stops there and
 * is resumed with Command({ resume }). The counter shows it ran once.
 */
export const deployed = { count: 0 };
const deployTool = tool(() => {
  const verdict = interrupt({ question: 'Deploy?' });
  if (verdict?.approved !== true) return 'not deployed';
  deployed.count++;
  return 'deployed';
}, { name: 'deploy', description: 'Deploy the build (needs approval).', schema: z.object({}) });

/** The ReAct-shaped loop: agent -> (tool calls ? tools : END), tools -> agent. */
export function buildGraph(saver, steps, withDeploy) {
  const model = new ScriptedChatModel(steps, withDeploy);
  const tools = withDeploy ? [stepTool, deployTool] : [stepTool];
  return new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode('tools', new ToolNode(tools))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', toolsCondition, ['tools', END])
    .addEdge('tools', 'agent')
    .compile({ checkpointer: saver });
}

/** Two supersteps a step (agent, tools), the answer's, and some room. */
const recursionLimit = (steps) => 2 * steps + 10;

function runConfig(threadId, steps, durability) {
  return { configurable: { thread_id: threadId }, recursionLimit: recursionLimit(steps), durability };
}

/** One loop of `steps` steps and the answer, on a new thread. */
export async function langgraphLoop(graph, threadId, steps, durability) {
  const state = await graph.invoke({ messages: [{ role: 'user', content: 'Loop.' }] }, runConfig(threadId, steps, durability));
  const last = state.messages[state.messages.length - 1];
  if (last?.content !== 'done' || state.messages.length !== 2 * steps + 2) throw new Error(`langgraph: the loop ended with ${state.messages.length} messages`);
}

/** Runs `steps` steps, then the deploy call, which stops the run at its interrupt. */
export async function langgraphSuspend(graph, threadId, steps, durability) {
  const state = await graph.invoke({ messages: [{ role: 'user', content: 'Loop.' }] }, runConfig(threadId, steps, durability));
  if (!state.__interrupt__?.length) throw new Error('langgraph: the run did not stop at the deploy interrupt');
}

/** Resumes a stopped run with the verdict: deploy runs, the model answers, the run ends. */
export async function langgraphResume(graph, threadId, steps, durability) {
  const state = await graph.invoke(new Command({ resume: { approved: true } }), runConfig(threadId, steps, durability));
  const last = state.messages[state.messages.length - 1];
  if (last?.content !== 'done' || state.__interrupt__?.length) throw new Error('langgraph: the resume did not complete the run');
}

/** A SqliteSaver on its own connection to `path`: WAL (the saver's setup sets it) and synchronous=FULL. */
export function openSqliteSaver(path) {
  const db = new Database(path);
  const saver = new SqliteSaver(db);
  saver.setup();
  db.pragma('synchronous = FULL');
  const mode = db.pragma('journal_mode', { simple: true });
  const sync = db.pragma('synchronous', { simple: true });
  if (mode !== 'wal' || sync !== 2) throw new Error(`langgraph sqlite: journal_mode=${mode}, synchronous=${sync}; expected wal and 2 (FULL)`);
  return { saver, close: () => db.close() };
}

/** A pg Pool of this package's pg, with `warm` connections opened. */
export async function openPool(url, warm = 2) {
  const pool = new pg.Pool({ connectionString: url });
  pool.on('error', () => undefined);
  const clients = await Promise.all(Array.from({ length: warm }, () => pool.connect()));
  for (const client of clients) client.release();
  return pool;
}

/** A PostgresSaver over `pool` in `schema`. setup() creates the schema and its tables. */
export function postgresSaver(pool, schema) {
  return new PostgresSaver(pool, undefined, { schema });
}

export { pg as langgraphPg, Database as LanggraphDatabase };

// A two-turn support bot on SQLite, with no API key: `npx tsx examples/support-bot.ts [file.sqlite]`.
// One SQLite file holds both the agent's run checkpoints and the user's session, so a
// restart loses neither; the second turn's model request holds the first turn.
// The model is scripted (createMockModel): swap in `createOpenAI()("gpt-...")` from
// cairn/openai to talk to a real one.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { Agent, createRunner, tool } from 'cairn';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createSqliteSessionService } from 'cairn/sessions/sqlite';
import { createMockModel, type MockTurn } from 'cairn/testing';

const file = process.argv[2] ?? join(mkdtempSync(join(tmpdir(), 'support-bot-')), 'support.sqlite');
const ops = createSqliteOpsStore({ path: file });
const sessionService = createSqliteSessionService({ ops });

// The shop's order system.
const orders: Record<string, { status: string; eta: string }> = { 'A-42': { status: 'shipped', eta: 'Friday' } };
const lookupOrder = tool({
  name: 'lookupOrder',
  description: 'Look an order up by its id.',
  schema: z.object({ orderId: z.string() }),
  execute: async ({ orderId }) => orders[orderId] ?? { status: 'unknown' },
});

// A stand-in for the model: it reads the conversation it is sent, as a real one would.
type Message = { role: string; content?: unknown };
const text = (m: Message | undefined) => (typeof m?.content === 'string' ? m.content : '');
function supportModel(messages: readonly Message[]): MockTurn {
  const last = messages.at(-1);
  if (last?.role === 'tool') {
    const found = last.content as { status: string; eta?: string };
    return { text: found.status === 'unknown' ? 'I cannot find that order.' : `It has ${found.status} and should arrive on ${found.eta}.` };
  }
  const question = text(last);
  const order = /[A-Z]-\d+/.exec(question)?.[0];
  if (order) return { toolCalls: [{ toolName: 'lookupOrder', args: { orderId: order } }] };
  // A follow-up: the earlier turns are in the request, so the model can answer from them.
  const earlier = messages.filter((m) => m.role === 'user').slice(0, -1).map(text);
  return { text: earlier.length > 0 ? `Earlier you asked: "${earlier.at(-1)}"` : 'How can I help?' };
}

const agent = new Agent({
  model: createMockModel({ strict: false, responses: [(request) => supportModel(request.messages as Message[])] }),
  instructions: 'You are the support bot of a small shop. Look orders up before answering.',
  maxSteps: 4,
  tools: [lookupOrder],
});
const runner = createRunner({ appName: 'shop-support', agent, sessionService, store: ops.agentRuns });

const first = await runner.run({ userId: 'ada', sessionId: 'ticket-1', prompt: 'Where is my order A-42?' });
console.log(`bot: ${first.outputText}`);
const second = await runner.run({ userId: 'ada', sessionId: first.session.sessionId, prompt: 'What did I ask you before?' });
console.log(`bot: ${second.outputText}`);

const session = await sessionService.getSession({ appName: 'shop-support', userId: 'ada', sessionId: 'ticket-1' });
console.log(`session ${session?.sessionId}: revision ${session?.revision}, ${session?.turns.length} turns, ${session?.messages.length} messages`);
console.log(`runs stored: ${(await ops.agentRuns.list!({ scope: 'default' })).runs.map((r) => r.status).join(', ')}`);
ops.close();

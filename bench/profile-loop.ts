/**
 * A quick profile of the durable loop (not part of `npm run bench`): ms per
 * step of a tool loop without a session, on the in-memory store and on SQLite.
 * `npx tsx --conditions=source bench/profile-loop.ts [steps]`
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInMemoryAgentRunStore, runAgent, type AgentRunStore } from 'cairn/agent';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { createMockModel, type MockTurn } from 'cairn/testing';

const steps = Number(process.argv[2] ?? 100);

function loop(store: AgentRunStore | null, runId: string) {
  const turn = (request: { messages: { role: string }[] }): MockTurn => {
    const done = request.messages.filter((m) => m.role === 'tool').length;
    return done < steps ? { toolCalls: [{ toolName: 'step', args: { n: done }, toolCallId: `c${done}` }] } : { text: 'done' };
  };
  return runAgent({
    model: createMockModel({ strict: false, responses: [turn] }),
    prompt: 'Loop.',
    maxSteps: steps + 2,
    ...(store ? { session: { store, runId, scope: 'bench' } } : {}),
    tools: { step: { parameters: { type: 'object' }, execute: (args: { n: number }) => ({ ok: true, n: args.n, pad: 'x'.repeat(200) }) } },
  });
}

async function time(label: string, make: () => AgentRunStore | null) {
  for (let i = 0; i < 3; i++) {
    const store = make();
    const t = performance.now();
    const r = await loop(store, `p-${label}-${i}`);
    const ms = performance.now() - t;
    if (r.status !== 'completed') throw new Error(r.status);
    console.log(`${label}: ${(ms / steps).toFixed(3)} ms/step`);
  }
}

const dir = mkdtempSync(join(tmpdir(), 'cairn-profile-'));
await time('engine', () => null);
await time('in-memory', () => createInMemoryAgentRunStore());
const ops = createSqliteOpsStore({ path: join(dir, 'p.sqlite') });
await time('sqlite', () => ops.agentRuns);
ops.close();
rmSync(dir, { recursive: true, force: true });

/**
 * A connection cut in the middle of a save. The store talks to Redis through
 * a TCP proxy of the test's that drops both sockets at the n-th save script:
 * either before the command reaches the server (the save did not happen) or
 * after the server ran it and before its answer came back (the save happened
 * and the store cannot know), or after it ran with the answer held back on an
 * open connection until the store stops waiting (commandTimeoutMs). Each way
 * the leg fails, and a resume through
 * the same store object must go on exactly as the in-memory store does after
 * the same fault ('reject' and 'apply-then-throw'): no step lost, no effect
 * twice.
 */
import net from 'node:net';
import { afterAll, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentResult, type AgentRunStore } from 'cairn/agent';
import { createRedisOpsStore, type RedisOpsStore } from 'cairn/ops/redis';
import { createFaultyStore, createLedger, createMockModel, ledgerTool, type Ledger, type StoreFaultMode } from 'cairn/testing';
import { SAVE } from '../../src/stores/redis/run-scripts.js';
import { describeRedis } from './redis-env.js';

/**
 * Where a cut falls: before the save reaches the server, after it ran and before its answer, or (`'hold'`) after it
 * ran with its answer held back and the connection left open, until the store gives up waiting (commandTimeoutMs).
 */
type Cut = 'before' | 'after' | 'hold';

interface Proxy {
  url: string;
  /** Cuts the connection at the n-th save script sent from now on. */
  cutAt(n: number, where: Cut): void;
  /** Whether the planned cut happened. */
  readonly cut: boolean;
  close(): Promise<void>;
}

/** The save script as it goes over the wire: by its sha, or (after NOSCRIPT) by its source. */
const MARKERS = [Buffer.from(SAVE.sha), Buffer.from(SAVE.source.split('\n').find((line) => line.includes('only ever appended'))!)];

async function proxy(upstreamPort: number): Promise<Proxy> {
  let plan: { n: number; where: Cut } | null = null;
  let seen = 0;
  let cut = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(upstreamPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    const drop = () => {
      cut = true;
      client.destroy();
      upstream.destroy();
    };
    let dropOnAnswer = false;
    let tail = Buffer.alloc(0);
    client.on('data', (chunk) => {
      const window = Buffer.concat([tail, chunk]);
      tail = window.subarray(Math.max(0, window.length - 64));
      if (plan && !cut && MARKERS.some((m) => window.includes(m))) {
        seen++;
        if (seen === plan.n) {
          if (plan.where === 'before') return drop();
          dropOnAnswer = true;
        }
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (dropOnAnswer && plan?.where === 'hold') {
        cut = true;
        return undefined;
      }
      if (dropOnAnswer) return drop();
      client.write(chunk);
    });
    for (const s of [client, upstream]) {
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `redis://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    cutAt(n, where) {
      plan = { n, where };
      seen = 0;
      cut = false;
    },
    get cut() {
      return cut;
    },
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}

/** Two charges, one a step; the model answers from the conversation, so it fits wherever a leg starts. */
const twoCharges = (store: AgentRunStore, runId: string, payments: Ledger) => ({
  model: createMockModel({
    strict: false,
    responses: [(request) => {
      const answered = request.messages.filter((m) => m.role === 'tool').length;
      return answered < 2 ? { toolCalls: [{ toolName: 'charge', toolCallId: `c${answered + 1}` }] } : { text: 'Charged twice.' };
    }],
  }),
  prompt: 'Charge order 7 twice.',
  session: { store, runId, scope: 'tenant-a' },
  tools: { charge: ledgerTool(payments, 'charge') },
});

const outcome = (r: AgentResult<unknown>) =>
  r.status === 'failed' ? `failed (${r.error.code})` : r.status === 'stopped' ? `stopped (${r.reason})` : r.status;

const closing: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const step of closing.splice(0).reverse()) await step();
});

describeRedis('redis store: a connection cut mid-save', (env) => {
  it.each<[string, Cut, StoreFaultMode]>([
    ['before the server ran it', 'before', 'reject'],
    ['after the server ran it, before its answer', 'after', 'apply-then-throw'],
    ['with its answer held past commandTimeoutMs', 'hold', 'apply-then-throw'],
  ])(
    'a save cut %s (%s), at each save in turn: the resume goes on as the in-memory store after %s',
    async (_label, where, mode) => {
      const healthy = createFaultyStore(createInMemoryAgentRunStore());
      await runAgent(twoCharges(healthy, 'order-7', createLedger()));
      const saves = healthy.saves;

      const port = Number(new URL(env.url).port || 6379);
      const wire = await proxy(port);
      closing.push(() => wire.close());
      const ops: RedisOpsStore = createRedisOpsStore({ url: wire.url, keyPrefix: env.newPrefix(), commandTimeoutMs: 400 });
      closing.push(() => ops.close());

      const rows: string[] = [];
      const expected: string[] = [];
      for (let n = 1; n <= saves; n++) {
        const runId = `order-${where}-${n}`;
        const disk = createInMemoryAgentRunStore();
        const oraclePayments = createLedger();
        const oracleFirst = await runAgent(twoCharges(createFaultyStore(disk, { failSave: { at: n, mode } }), runId, oraclePayments));
        const oracleStored = (await disk.load(runId))?.revision ?? 0;
        const oracleAgain = twoCharges(disk, runId, oraclePayments);
        const oracleResumed = await resumeAgent(oracleAgain);
        expected.push(`${n}: ${outcome(oracleFirst)}, stored ${oracleStored} -> ${outcome(oracleResumed)}, charges ${oraclePayments.total()}, model calls ${oracleAgain.model.calls.length}`);

        wire.cutAt(n, where);
        const payments = createLedger();
        const first = await runAgent(twoCharges(ops.agentRuns, runId, payments));
        expect(wire.cut, `save ${n} was cut`).toBe(true);
        const stored = (await ops.agentRuns.load(runId))?.revision ?? 0;
        const again = twoCharges(ops.agentRuns, runId, payments);
        const resumed = await resumeAgent(again);
        rows.push(`${n}: ${outcome(first)}, stored ${stored} -> ${outcome(resumed)}, charges ${payments.total()}, model calls ${again.model.calls.length}`);
        for (const times of Object.values(payments.entries())) expect(times).toBe(1);
      }
      expect(rows).toEqual(expected);
    },
  );
});

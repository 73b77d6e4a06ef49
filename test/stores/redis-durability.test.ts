/**
 * The Redis store on a redis-server of the test's own, with the append-only
 * file fsynced on every write (`--appendonly yes --appendfsync always`):
 * SIGKILLed and started again on the same directory, it still holds every
 * save it acknowledged, and a resume through the same store object (which
 * connects again on its own) goes on correctly. Also: a server the store
 * cannot trust (one that may evict any key) is refused before anything is
 * written.
 */
import { afterEach, expect, it } from 'vitest';
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentResult, type AgentRunStore } from 'cairn/agent';
import { createRedisOpsStore, UnsupportedStoreError, type RedisOpsStore } from 'cairn/ops/redis';
import { createFaultyStore, createLedger, createMockModel, ledgerTool, type Ledger } from 'cairn/testing';
import { describeOwnRedis, rawClient, startOwnRedis, type OwnRedis } from './redis-env.js';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function server(args: string[] = []): Promise<OwnRedis> {
  const redis = await startOwnRedis(args);
  cleanup.push(() => redis.destroy());
  return redis;
}

function store(url: string): RedisOpsStore {
  // A short connect deadline: a save made while the server is down fails fast.
  const ops = createRedisOpsStore({ url, keyPrefix: 'aof:', connectTimeoutMs: 500 });
  cleanup.push(() => ops.close());
  return ops;
}

/** A run that charges twice, one call a step; the model answers from the conversation, so it fits wherever a leg starts. */
const twoCharges = (session: AgentRunStore, payments: Ledger, needsApproval = false) => ({
  model: createMockModel({
    strict: false,
    responses: [(request) => {
      const answered = request.messages.filter((m) => m.role === 'tool').length;
      return answered < 2 ? { toolCalls: [{ toolName: 'charge', toolCallId: `c${answered + 1}` }] } : { text: 'Charged twice.' };
    }],
  }),
  prompt: 'Charge order 7 twice.',
  session: { store: session, runId: 'order-7', scope: 'tenant-a' },
  tools: { charge: ledgerTool(payments, 'charge', { needsApproval }) },
});

const outcome = (r: AgentResult<unknown>) =>
  r.status === 'failed' ? `failed (${r.error.code})` : r.status === 'stopped' ? `stopped (${r.reason})` : r.status;

describeOwnRedis('redis store across a server restart (AOF, appendfsync always)', () => {
  it('resumes a suspended run after the server was SIGKILLed and started again, through the same store object', async () => {
    const redis = await server();
    const ops = store(redis.url);
    const payments = createLedger();
    const first = await runAgent(twoCharges(ops.agentRuns, payments, true));
    if (first.status !== 'suspended') throw new Error(`expected a suspension, got ${outcome(first)}`);
    const stored = await ops.agentRuns.load('order-7');

    await redis.kill();
    await redis.start();

    const after = await ops.agentRuns.load('order-7');
    expect(after).toEqual(stored);
    const approve = (r: AgentResult<unknown>) =>
      r.status === 'suspended' ? r.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true })) : [];
    const second = await resumeAgent({ ...twoCharges(ops.agentRuns, payments, true), approvalResponses: approve(first) });
    expect(second.status).toBe('suspended');
    await redis.kill();
    await redis.start();
    const done = await resumeAgent({ ...twoCharges(ops.agentRuns, payments, true), approvalResponses: approve(second) });
    expect(outcome(done)).toBe('completed');
    expect(done.status === 'completed' && done.text).toBe('Charged twice.');
    expect(payments.entries()).toEqual({ 'charge@0:c1': 1, 'charge@1:c2': 1 });
  });

  it('keeps every acknowledged save through a SIGKILL after any save, and the resume goes on as from a store whose next save failed', async () => {
    // How many saves a healthy run makes, and what a resume does after each one in turn fails (the in-memory oracle).
    const healthy = createFaultyStore(createInMemoryAgentRunStore());
    await runAgent(twoCharges(healthy, createLedger()));
    const saves = healthy.saves;
    expect(saves).toBeGreaterThan(4);

    const redis = await server();
    const ops = store(redis.url);
    const rows: string[] = [];
    const expected: string[] = [];
    for (let n = 1; n <= saves; n++) {
      // The oracle: save n lands, every later one fails.
      const disk = createInMemoryAgentRunStore();
      const oraclePayments = createLedger();
      const oracleFirst = await runAgent(twoCharges(createFaultyStore(disk, { failSave: { at: n + 1, mode: 'reject', times: Infinity } }), oraclePayments));
      const oracleAgain = twoCharges(disk, oraclePayments);
      const oracleResumed = await resumeAgent(oracleAgain);
      expected.push(`${n}: ${outcome(oracleFirst)} -> ${outcome(oracleResumed)}, charges ${oraclePayments.total()}, model calls ${oracleAgain.model.calls.length}`);

      // Redis: the server dies right after acknowledging save n.
      const client = rawClient(redis.url);
      await client.connect();
      await client.sendCommand(['FLUSHALL']);
      await client.close();
      let count = 0;
      let acknowledged = 0;
      const killing: AgentRunStore = {
        load: (runId, options) => ops.agentRuns.load(runId, options),
        async save(envelope, options) {
          await ops.agentRuns.save(envelope, options);
          if (++count === n) {
            acknowledged = envelope.revision;
            await redis.kill();
          }
        },
      };
      const payments = createLedger();
      const first = await runAgent(twoCharges(killing, payments));
      expect(count, `save ${n} was made`).toBeGreaterThanOrEqual(n);
      await redis.start();
      expect((await ops.agentRuns.load('order-7'))?.revision, `save ${n}`).toBe(acknowledged);
      const again = twoCharges(ops.agentRuns, payments);
      const resumed = await resumeAgent(again);
      rows.push(`${n}: ${outcome(first)} -> ${outcome(resumed)}, charges ${payments.total()}, model calls ${again.model.calls.length}`);
      // No charge ran twice, whatever the row.
      for (const times of Object.values(payments.entries())) expect(times).toBe(1);
    }
    expect(rows).toEqual(expected);
  });
});

describeOwnRedis('redis store on a server out of memory', () => {
  it('refuses a save whole when the server is full (noeviction), keeps the last record readable, and the run goes on once there is room', async () => {
    const redis = await server(['--maxmemory-policy', 'noeviction']);
    const admin = rawClient(redis.url);
    await admin.connect();
    cleanup.push(() => admin.close());
    const used = Number(/used_memory:(\d+)/.exec(String(await admin.sendCommand(['INFO', 'memory'])))![1]);
    await admin.sendCommand(['CONFIG', 'SET', 'maxmemory', String(used + 3 * 1024 * 1024)]);

    const ops = store(redis.url);
    let acknowledged = 0;
    const tracking: AgentRunStore = {
      load: (runId, options) => ops.agentRuns.load(runId, options),
      async save(envelope, options) {
        await ops.agentRuns.save(envelope, options);
        acknowledged = envelope.revision;
      },
    };
    const payments = createLedger();
    const options = (on: AgentRunStore) => ({
      model: createMockModel({
        strict: false,
        responses: [(request) => {
          const answered = request.messages.filter((m) => m.role === 'tool').length;
          return answered < 200 ? { toolCalls: [{ toolName: 'fill', toolCallId: `f${answered}` }] } : { text: 'Full.' };
        }],
      }),
      prompt: 'Fill the server.',
      maxSteps: 210,
      session: { store: on, runId: 'fill', scope: 'tenant-a' },
      // 64 KB a result; a repeat is harmless, so a resume may run a call whose result was not saved again.
      tools: { fill: ledgerTool(payments, 'fill', { idempotent: true, result: (_, ctx) => `${ctx.toolCallId}:${'x'.repeat(64_000)}` }) },
    });
    const first = await runAgent(options(tracking));
    expect(outcome(first)).toBe('failed (persistence_failed)');
    expect(first.status === 'failed' && String((first.error as { cause?: unknown }).cause ?? first.error.message)).toMatch(/OOM|memory/i);
    expect(acknowledged).toBeGreaterThan(2);
    // The refused save wrote nothing: the last acknowledged record loads whole.
    const last = await ops.agentRuns.load('fill');
    expect(last?.revision).toBe(acknowledged);

    await admin.sendCommand(['CONFIG', 'SET', 'maxmemory', '0']);
    const done = await resumeAgent(options(ops.agentRuns));
    expect(outcome(done)).toBe('completed');
    expect(done.status === 'completed' && done.text).toBe('Full.');
    for (const times of Object.values(payments.entries())) expect(times).toBeLessThanOrEqual(2);
    expect(Object.keys(payments.entries())).toHaveLength(200);
  });
});

describeOwnRedis('redis store: a server it cannot trust', () => {
  it('refuses a server whose maxmemory-policy may evict any key, before writing anything', async () => {
    const redis = await server(['--maxmemory-policy', 'allkeys-lru']);
    const ops = store(redis.url);
    let error: unknown;
    try {
      await ops.agentRuns.save({} as never);
    } catch (e) {
      error = e;
    }
    // An envelope is checked first; a real one reaches the server check.
    expect(error).toMatchObject({ code: 'invalid_envelope' });
    const result = await runAgent(twoCharges(ops.agentRuns, createLedger()));
    expect(result.status).toBe('failed');
    await expect(ops.connect()).rejects.toSatisfy((e: unknown) => UnsupportedStoreError.isInstance(e)
      && (e as UnsupportedStoreError).feature === 'maxmemory-policy' && (e as UnsupportedStoreError).backend === 'redis');
    const client = rawClient(redis.url);
    await client.connect();
    expect(await client.sendCommand(['DBSIZE'])).toBe(0);
    await client.close();
  });
});

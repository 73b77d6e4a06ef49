/**
 * The Redis ops store beyond the conformance suites: what it refuses at
 * configuration, a server that does not answer, where its keys go, the
 * transcript kept append-only, and an approval token that resumes a run once
 * even when two executors bring it at the same time.
 */
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidOptionsError, resumeAgent, runAgent, type AgentRunStore } from 'cairn/agent';
import { createRedisOpsStore, StoreUnreachableError, UnsupportedStoreError, type RedisOpsStore } from 'cairn/ops/redis';
import { createLedger, createMockModel, ledgerTool, type Ledger } from 'cairn/testing';
import { describeRedis, rawClient } from './redis-env.js';

const opened: RedisOpsStore[] = [];
const open = (url: string, keyPrefix: string, extra: Record<string, unknown> = {}) => {
  const ops = createRedisOpsStore({ url, keyPrefix, ...extra });
  opened.push(ops);
  return ops;
};
afterAll(async () => {
  for (const ops of opened.splice(0)) await ops.close();
});

async function rejection(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** A port nothing listens on (taken, then given back). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A TCP server that accepts connections and never answers a byte. */
async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}

/** A one-call run that charges once, then answers. */
const chargeRun = (store: AgentRunStore, runId: string, payments: Ledger, needsApproval = false) => ({
  model: createMockModel({
    strict: false,
    responses: [(request) => (request.messages.some((m) => m.role === 'tool')
      ? { text: 'Charged.' }
      : { toolCalls: [{ toolName: 'charge', toolCallId: 'c1' }] })],
  }),
  prompt: 'Charge order 7.',
  session: { store, runId, scope: 'tenant-a' },
  tools: { charge: ledgerTool(payments, 'charge', { needsApproval }) },
});

describe('createRedisOpsStore: options refused before anything connects', () => {
  it('refuses checkpointVersion 3 with UnsupportedStoreError (backend redis, feature agent-run-v3), even for a URL that does not answer', () => {
    let error: unknown;
    try {
      createRedisOpsStore({ url: 'redis://127.0.0.1:1', checkpointVersion: 3 });
    } catch (e) {
      error = e;
    }
    expect(UnsupportedStoreError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: 'unsupported_store', backend: 'redis', feature: 'agent-run-v3', fault: 'user' });
    // Versions 1 and 2 are what every run writes: accepted.
    expect(() => createRedisOpsStore({ url: 'redis://127.0.0.1:1', checkpointVersion: 2 })).not.toThrow();
  });

  it.each([
    ['no options', undefined],
    ['no url', {}],
    ['a URL of another scheme', { url: 'postgres://127.0.0.1/test' }],
    ['checkpointVersion 4', { url: 'redis://127.0.0.1:1', checkpointVersion: 4 }],
    ['a key prefix with a space', { url: 'redis://127.0.0.1:1', keyPrefix: 'a b' }],
    ['connectTimeoutMs 0', { url: 'redis://127.0.0.1:1', connectTimeoutMs: 0 }],
    ['a negative commandTimeoutMs', { url: 'redis://127.0.0.1:1', commandTimeoutMs: -1 }],
  ])('refuses %s with InvalidOptionsError', (_, options) => {
    expect(() => createRedisOpsStore(options as never)).toThrow(InvalidOptionsError);
  });
});

describe('a Redis URL that does not answer', () => {
  it('rejects connect, load and save with StoreUnreachableError when nothing listens, the password hidden', async () => {
    const port = await closedPort();
    const ops = open(`redis://cairn:s3cret@127.0.0.1:${port}`, 'x:', { connectTimeoutMs: 300 });
    for (const work of [() => ops.connect(), () => ops.agentRuns.load('r'), () => ops.leases.acquire('k', 'o', 1_000)]) {
      const error = await rejection(work);
      expect(StoreUnreachableError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ code: 'store_unreachable', backend: 'redis', timeoutMs: 300, isRetryable: true, fault: 'dependency' });
      expect((error as StoreUnreachableError).url).toBe(`redis://cairn:***@127.0.0.1:${port}`);
      expect((error as Error).message).not.toContain('s3cret');
    }
  });

  it('rejects with StoreUnreachableError when the server accepts the connection and never answers', async () => {
    const silent = await silentServer();
    try {
      const ops = open(`redis://127.0.0.1:${silent.port}`, 'x:', { connectTimeoutMs: 400 });
      const error = await rejection(() => ops.agentRuns.load('r'));
      expect(error).toMatchObject({ code: 'store_unreachable', timeoutMs: 400 });
    } finally {
      await silent.close();
    }
  });

  it('fails a run as persistence_failed with the unreachable store as its cause, and the tool never runs', async () => {
    const ops = open(`redis://127.0.0.1:${await closedPort()}`, 'x:', { connectTimeoutMs: 200 });
    const payments = createLedger();
    const result = await runAgent(chargeRun(ops.agentRuns, 'order-7', payments));
    expect(result.status).toBe('failed');
    expect(result.status === 'failed' && result.error.code).toBe('persistence_failed');
    expect(payments.total()).toBe(0);
  });

  it('leaves no timer or socket behind: a process that met it exits by itself, without close()', () => {
    const program = `
      import { createRedisOpsStore } from 'cairn/ops/redis';
      const ops = createRedisOpsStore({ url: 'redis://127.0.0.1:1', connectTimeoutMs: 300 });
      await ops.agentRuns.load('r').catch((e) => console.log(e.code));`;
    const child = spawnSync(process.execPath, ['--conditions=source', '--import', 'tsx', '--input-type=module', '-e', program], {
      encoding: 'utf8', timeout: 30_000,
    });
    expect(child.signal).toBeNull();
    expect(child.stdout.trim()).toBe('store_unreachable');
    expect(child.status).toBe(0);
  });
});

describeRedis('redis store', (env) => {
  it('keeps every key under its prefix, and two prefixes on one server apart', async () => {
    const a = env.newPrefix();
    const b = env.newPrefix();
    const payments = createLedger();
    const storeA = open(env.url, a).agentRuns;
    const storeB = open(env.url, b).agentRuns;
    const runId = `order-${a.slice(-13, -1)}`;
    expect((await runAgent(chargeRun(storeA, runId, payments))).status).toBe('completed');
    expect(await storeB.load(runId)).toBeUndefined();
    expect((await storeB.list()).runs).toEqual([]);
    const everywhere = await env.keysUnder('');
    const ours = everywhere.filter((key) => key.includes(runId));
    expect(ours.length).toBeGreaterThan(0);
    for (const key of ours) expect(key.startsWith(a)).toBe(true);
    expect(await env.keysUnder(b)).toEqual([]);
  });

  it('keeps a lease hash (and its token) unless leaseRetentionMs is set; then Redis deletes it that long after release', async () => {
    const kept = env.newPrefix();
    const retained = env.newPrefix();
    for (const [prefix, extra] of [[kept, {}], [retained, { leaseRetentionMs: 60_000 }]] as const) {
      const leases = open(env.url, prefix, extra).leases;
      const lease = await leases.acquire('run-1', 'worker-1', 5_000);
      expect(lease?.token).toBe(1);
      await leases.release(lease!);
      // The next holder's token is greater: the hash kept the last one.
      const next = await leases.acquire('run-1', 'worker-2', 5_000);
      expect(next?.token).toBe(2);
      await leases.release(next!);
    }
    const ttl = async (prefix: string) => Number(await env.command(['PTTL', `${prefix}l:run-1`]));
    expect(await ttl(kept)).toBe(-1);
    const left = await ttl(retained);
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(60_000);
  });

  it('appends the transcript: every save keeps the parts stored before it, byte for byte', async () => {
    const prefix = env.newPrefix();
    const store = open(env.url, prefix).agentRuns;
    const client = rawClient(env.url);
    await client.connect();
    const seen: Buffer[][] = [];
    const recording: AgentRunStore = {
      load: (runId, options) => store.load(runId, options),
      async save(envelope, options) {
        await store.save(envelope, options);
        seen.push(await client.sendCommand(['LRANGE', `${prefix}r:m:steps`, '0', '-1'], { typeMapping: { 36: Buffer } }) as Buffer[]);
      },
    };
    try {
      const payments = createLedger();
      let turn = 0;
      const result = await runAgent({
        model: createMockModel({ strict: false, responses: [() => (++turn <= 3 ? { toolCalls: [{ toolName: 'charge', toolCallId: `c${turn}` }] } : { text: 'Done.' })] }),
        prompt: 'Charge three times.',
        session: { store: recording, runId: 'steps', scope: 'tenant-a' },
        tools: { charge: ledgerTool(payments, 'charge') },
      });
      expect(result.status).toBe('completed');
      expect(seen.length).toBeGreaterThan(4);
      for (let i = 1; i < seen.length; i++) {
        expect(seen[i]!.length).toBeGreaterThanOrEqual(seen[i - 1]!.length);
        seen[i - 1]!.forEach((part, j) => expect(part.equals(seen[i]![j]!), `save ${i + 1}, part ${j}`).toBe(true));
      }
      expect(seen[seen.length - 1]!.length).toBeGreaterThan(seen[0]!.length);
    } finally {
      await client.close();
    }
  });

  it('applies an approval once when two executors resume with the same token at the same time; a third use changes nothing', async () => {
    const prefix = env.newPrefix();
    const payments = createLedger();
    const first = await runAgent(chargeRun(open(env.url, prefix).agentRuns, 'approve-1', payments, true));
    if (first.status !== 'suspended') throw new Error(`expected a suspension, got ${first.status}`);
    const approvalResponses = first.pendingApprovals.map((p) => ({ approvalId: p.approvalId, token: p.token, approved: true }));
    const legs = await Promise.all([0, 1].map(() =>
      resumeAgent({ ...chargeRun(open(env.url, prefix).agentRuns, 'approve-1', payments, true), approvalResponses })));
    expect(payments.total()).toBe(1);
    // One leg completes. The other lost the race in one of two safe ways,
    // depending on when it loaded: before the winner's first save, its own
    // save is refused (persistence_failed); after the winner's `executing`
    // receipt, it finds a charge it cannot know the end of and stops for
    // reconciliation rather than charge again. Never a second completion.
    expect(legs.filter((r) => r.status === 'completed')).toHaveLength(1);
    const lost = legs.find((r) => r.status !== 'completed');
    const how = lost?.status === 'failed' ? lost.error.code : lost?.status === 'stopped' ? lost.reason : lost?.status;
    expect(['persistence_failed', 'tool-reconciliation-required']).toContain(how);
    const store = open(env.url, prefix).agentRuns;
    const done = await store.load('approve-1');
    const third = await resumeAgent({ ...chargeRun(store, 'approve-1', payments, true), approvalResponses });
    expect(payments.total()).toBe(1);
    expect(third.status).toBe('completed');
    expect((await store.load('approve-1'))?.revision).toBe(done?.revision);
  });
});

/**
 * Writes the compatibility corpus of one run-machine version: the stored
 * record of each case below, as the engine of that version saved it.
 *
 * Run it ONCE per machine version, from a checkout of the engine commit that
 * defines that version (not from a newer one: the point is a record the old
 * engine wrote), with this file and corpus-agent.ts copied in:
 *
 *   git worktree add --detach /tmp/corpus-wt <engine commit>
 *   ln -s "$PWD/node_modules" /tmp/corpus-wt/node_modules
 *   cp test/compat/corpus-agent.ts test/compat/generate-corpus.ts /tmp/corpus-wt/test/compat/
 *   cd /tmp/corpus-wt && npx tsx --conditions=source test/compat/generate-corpus.ts --out <this repo>/test/compat/corpus
 *
 * It writes <out>/run-v<N>/<case>.json, N being the machine version found in
 * the records, and refuses to write into a run-v<N> folder that exists: the
 * files of a version are written once and never regenerated or edited. A new
 * machine version gets its own folder, written by the engine of that version.
 *
 * Each file is the envelope exactly as the in-memory store held it (read back
 * with `store.load`, which returns the stored JSON), indented for reading.
 * The clock and the id generator are fixed, so two runs of the generator on
 * the same commit write byte-identical files.
 */
import { mkdirSync, existsSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  APICallError, agentRunLeaseKey, createInMemoryAgentRunStore, createInMemoryLeaseProvider, resumeAgent, runAgent,
  type AgentResult, type AgentRunEnvelope, type InMemoryAgentRunStore,
} from 'cairn/agent';
import { cloneStore, createCrashPlan } from 'cairn/testing';
import { CORPUS_SCOPE, corpusAgent, createEffects, WRITTEN_AT } from './corpus-agent.js';

const ORDER = { orderId: '7' };
const PAYMENT = { orderId: '7', amountCents: 4200 };

interface Case {
  name: string;
  /** What the record is, for the log; the README says the same. */
  is: string;
  /** Drives the version-1 engine until the store holds the record to freeze; returns that store. */
  write(runId: string): Promise<InMemoryAgentRunStore>;
  /** The stored status the case must end in. */
  status: AgentRunEnvelope['status'];
}

function expectStatus(result: AgentResult, status: AgentResult['status'], what: string): void {
  if (result.status !== status) {
    throw new Error(`${what}: expected ${status}, got ${result.status} ${JSON.stringify(result.status === 'failed' ? result.error : '')}`);
  }
}

const cases: Case[] = [
  {
    name: 'suspended-approval',
    is: 'a lookup answered, then a payment waiting for its approval',
    status: 'suspended',
    async write(runId) {
      const store = createInMemoryAgentRunStore();
      const result = await runAgent(corpusAgent({
        effects: createEffects(), runId, store,
        responses: [
          { toolCalls: [{ toolName: 'lookup', toolCallId: 'lookup-1', args: ORDER }] },
          { toolCalls: [{ toolName: 'pay', toolCallId: 'pay-1', args: PAYMENT }] },
        ],
      }));
      expectStatus(result, 'suspended', this.name);
      return store;
    },
  },
  {
    name: 'suspended-client-call',
    is: 'a client tool call waiting for the client\'s answer',
    status: 'suspended',
    async write(runId) {
      const store = createInMemoryAgentRunStore();
      const result = await runAgent(corpusAgent({
        effects: createEffects(), runId, store,
        responses: [{ toolCalls: [{ toolName: 'askUser', toolCallId: 'ask-1', args: { question: 'Gift wrap order 7?' } }] }],
      }));
      expectStatus(result, 'suspended', this.name);
      return store;
    },
  },
  {
    name: 'suspended-approval-and-client-call',
    is: 'one model step that made a payment (waiting for approval) and a client call (waiting for its answer)',
    status: 'suspended',
    async write(runId) {
      const store = createInMemoryAgentRunStore();
      const result = await runAgent(corpusAgent({
        effects: createEffects(), runId, store,
        responses: [{
          toolCalls: [
            { toolName: 'pay', toolCallId: 'pay-1', args: PAYMENT },
            { toolName: 'askUser', toolCallId: 'ask-1', args: { question: 'Gift wrap order 7?' } },
          ],
        }],
      }));
      expectStatus(result, 'suspended', this.name);
      if (result.status === 'suspended' && (result.pendingApprovals.length !== 1 || result.pendingClientCalls.length !== 1)) {
        throw new Error(`${this.name}: expected one approval and one client call`);
      }
      return store;
    },
  },
  {
    name: 'unknown-effect',
    is: 'the process died during ship\'s effect: an executing receipt with no outcome',
    status: 'running',
    async write(runId) {
      const disk = createInMemoryAgentRunStore();
      const crash = createCrashPlan({ at: { kind: 'tool', toolName: 'ship', index: 1, when: 'after' } });
      const options = corpusAgent({
        effects: createEffects(), runId, store: crash.wrapStore(disk),
        responses: [{ toolCalls: [{ toolName: 'ship', toolCallId: 'ship-1', args: ORDER }] }],
      });
      const outcome = await crash.race(runAgent({ ...options, model: crash.wrapModel(options.model), tools: crash.wrapTools(options.tools!) }));
      if (!outcome.crashed) throw new Error(`${this.name}: the crash point was not reached`);
      await expectReconciliationStop(disk, runId, this.name);
      return disk;
    },
  },
  {
    name: 'unknown-effect-approved',
    is: 'a payment was approved, then the process died during its effect: the verdict is recorded, the receipt says executing',
    status: 'running',
    async write(runId) {
      const disk = createInMemoryAgentRunStore();
      const first = await runAgent(corpusAgent({
        effects: createEffects(), runId, store: disk,
        responses: [{ toolCalls: [{ toolName: 'pay', toolCallId: 'pay-1', args: PAYMENT }] }],
      }));
      expectStatus(first, 'suspended', `${this.name} (first leg)`);
      if (first.status !== 'suspended') throw new Error('unreachable');
      const crash = createCrashPlan({ at: { kind: 'tool', toolName: 'pay', index: 1, when: 'after' } });
      const options = corpusAgent({ effects: createEffects(), runId, store: crash.wrapStore(disk), responses: [], idPrefix: 'corpus-leg2' });
      const outcome = await crash.race(resumeAgent({
        ...options,
        model: crash.wrapModel(options.model),
        tools: crash.wrapTools(options.tools!),
        approvalResponses: first.pendingApprovals.map((a) => ({ approvalId: a.approvalId, token: a.token, approved: true })),
      }));
      if (!outcome.crashed) throw new Error(`${this.name}: the crash point was not reached`);
      await expectReconciliationStop(disk, runId, this.name);
      return disk;
    },
  },
  {
    name: 'failed-transient',
    is: 'a lookup answered, then the model call failed with a retryable 503 (APICallError): failed, with retry',
    status: 'failed',
    async write(runId) {
      const store = createInMemoryAgentRunStore();
      const result = await runAgent(corpusAgent({
        effects: createEffects(), runId, store,
        responses: [
          { toolCalls: [{ toolName: 'lookup', toolCallId: 'lookup-1', args: ORDER }] },
          {
            error: new APICallError({
              message: 'The provider is overloaded.', provider: 'mock', url: 'https://models.invalid/v1/generate',
              statusCode: 503, isRetryable: true,
            }),
          },
        ],
      }));
      expectStatus(result, 'failed', this.name);
      if (result.status === 'failed' && result.retry === undefined) throw new Error(`${this.name}: the failure is not marked retryable`);
      return store;
    },
  },
  {
    name: 'drained',
    is: 'ship ran while a drain was requested: the run stopped at the next model-step boundary, stored as drained',
    status: 'drained',
    async write(runId) {
      const store = createInMemoryAgentRunStore();
      const clock = { now: () => WRITTEN_AT };
      const leases = createInMemoryLeaseProvider({ clock });
      // Resolves once a renewal carried the drain to the holder: the tool returns only then, so the stop is certain.
      let delivered!: () => void;
      const drainDelivered = new Promise<void>((done) => (delivered = done));
      const renew = leases.renew.bind(leases);
      const provider = {
        acquire: leases.acquire.bind(leases),
        release: leases.release.bind(leases),
        inspect: leases.inspect.bind(leases),
        requestDrain: leases.requestDrain.bind(leases),
        renew: async (...args: Parameters<typeof renew>) => {
          const renewal = await renew(...args);
          if (renewal?.drain) delivered();
          return renewal;
        },
      };
      const key = agentRunLeaseKey({ runId, scope: CORPUS_SCOPE });
      const result = await runAgent({
        ...corpusAgent({
          effects: createEffects(), runId, store,
          responses: [{ toolCalls: [{ toolName: 'ship', toolCallId: 'ship-1', args: ORDER }] }],
          holdShip: async () => {
            await provider.requestDrain(key);
            // The lease's renewal timer is unref'd: outside a test runner, this one keeps Node alive until it fires.
            const keepAlive = setInterval(() => {}, 1_000);
            await drainDelivered;
            clearInterval(keepAlive);
          },
        }),
        lease: { provider, owner: 'corpus-worker', ttlMs: 60 },
      });
      expectStatus(result, 'stopped', this.name);
      if (result.status === 'stopped' && result.reason !== 'drained') throw new Error(`${this.name}: stopped for ${result.reason}`);
      return store;
    },
  },
  {
    name: 'completed',
    is: 'a lookup, then the final answer: completed, with its result',
    status: 'completed',
    async write(runId) {
      const store = createInMemoryAgentRunStore();
      const result = await runAgent(corpusAgent({
        effects: createEffects(), runId, store,
        responses: [
          { toolCalls: [{ toolName: 'lookup', toolCallId: 'lookup-1', args: ORDER }] },
          { text: 'Order 7 is packed.' },
        ],
      }));
      expectStatus(result, 'completed', this.name);
      return store;
    },
  },
];

/** The crashed record must be one a resume stops on, or it is not the case it claims to be. */
async function expectReconciliationStop(disk: InMemoryAgentRunStore, runId: string, name: string): Promise<void> {
  const probe = await cloneStore(disk, [runId]);
  const result = await resumeAgent(corpusAgent({ effects: createEffects(), runId, store: probe, responses: [], idPrefix: 'probe' }));
  if (result.status !== 'stopped' || result.reason !== 'tool-reconciliation-required') {
    throw new Error(`${name}: a resume of the crashed record should stop for reconciliation, got ${result.status}`);
  }
}

function outDir(): string {
  const flag = process.argv.indexOf('--out');
  if (flag >= 0) {
    const value = process.argv[flag + 1];
    if (!value) throw new Error('--out needs a folder');
    return resolve(value);
  }
  return join(dirname(fileURLToPath(import.meta.url)), 'corpus');
}

async function main(): Promise<void> {
  const records: { name: string; is: string; envelope: AgentRunEnvelope }[] = [];
  for (const c of cases) {
    const runId = `corpus-${c.name}`;
    process.stdout.write(`writing ${c.name} ... `);
    const store = await c.write(runId);
    const envelope = await store.load(runId);
    if (!envelope) throw new Error(`${c.name}: nothing stored`);
    if (envelope.status !== c.status) throw new Error(`${c.name}: stored status ${envelope.status}, expected ${c.status}`);
    records.push({ name: c.name, is: c.is, envelope });
    console.log('ok');
  }
  const versions = new Set(records.map((r) => `${r.envelope.machine.id}@${r.envelope.machine.version}`));
  if (versions.size !== 1) throw new Error(`The records disagree on the machine: ${[...versions].join(', ')}`);
  const folder = join(outDir(), `run-v${records[0]!.envelope.machine.version}`);
  if (existsSync(folder)) {
    throw new Error(`${folder} exists. A machine version's corpus is written once and never regenerated; a new version gets a new folder.`);
  }
  mkdirSync(folder, { recursive: true });
  for (const { name, is, envelope } of records) {
    writeFileSync(join(folder, `${name}.json`), `${JSON.stringify(envelope, null, 2)}\n`);
    console.log(`${name}.json  status=${envelope.status} revision=${envelope.revision} envelope v${envelope.version}  ${is}`);
  }
  console.log(`wrote ${records.length} records to ${folder}`);
}

// A leg that never settles would let Node exit quietly with status 0: say so, and fail.
process.on('exit', (code) => {
  if (code === 0 && !finished) {
    console.error('\nA leg never settled: no files were written.');
    process.exitCode = 1;
  }
});
let finished = false;

main().then(
  // Crashed legs leave promises that never settle (that is the simulated crash); nothing is left to wait for.
  () => {
    finished = true;
    process.exit(0);
  },
  (error) => {
    console.error(error);
    process.exit(1);
  },
);

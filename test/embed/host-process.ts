/**
 * A host process for the host-kill tests: a support-ticket workflow machine
 * that invokes an agent run (cairn/embed) on a SQLite store. It writes the
 * host actor's persisted snapshot to a file after every change of any actor
 * in its system (and appends each one to `<file>.log`), prints one JSON line per event the test waits
 * for, and can be told to hang inside a tool so the test can SIGKILL it there.
 *
 * Started with the `{ mode: 'restore' }` argument, it restores the host actor
 * from the file instead of starting a new ticket.
 */
import { appendFileSync, closeSync, fsyncSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { assign, createActor, sendTo, setup, type SnapshotFrom } from 'xstate';
import { agentRunLogic, type AgentRunUnsettledEvent, type AgentRunWaitingEvent } from 'cairn/embed';
import { createSqliteOpsStore } from 'cairn/ops/sqlite';
import { refundModel } from './helpers.js';

export interface HostArgs {
  mode: 'start' | 'restore';
  db: string;
  snapshotFile: string;
  /** Effects, one line each, fsync'd: outlives a SIGKILL. */
  ledger: string;
  ttlMs: number;
  /** Hang (for the test to kill us) inside lookupOrder, or inside refund after its effect landed. */
  hangIn?: 'lookup' | 'refund';
  /** Send the person's approval once the run waits for it. */
  approve: boolean;
}


const args = JSON.parse(process.argv[2]!) as HostArgs;
const say = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`);
const record = (line: string) => {
  const fd = openSync(args.ledger, 'a');
  appendFileSync(fd, `${line}\n`);
  fsyncSync(fd);
  closeSync(fd);
};
const hang = () => new Promise<void>(() => setInterval(() => undefined, 1_000));

const ops = createSqliteOpsStore({ path: args.db });

const refundAgent = agentRunLogic({
  model: refundModel(),
  system: 'SYSTEM-PROMPT-MARKER: you handle support tickets.',
  tools: {
    lookupOrder: {
      parameters: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
      replay: 'idempotent',
      execute: async ({ orderId }: { orderId: string }) => {
        record(`lookup ${orderId}`);
        say({ event: 'lookup-started' });
        if (args.hangIn === 'lookup') await hang();
        return { orderId, paid: 20, note: 'LOOKUP-RESULT-MARKER' };
      },
    },
    refund: {
      parameters: { type: 'object', properties: { orderId: { type: 'string' }, amount: { type: 'number' } }, required: ['orderId', 'amount'] },
      needsApproval: true,
      execute: async ({ orderId, amount }: { orderId: string; amount: number }) => {
        record(`refund ${orderId} ${amount}`);
        say({ event: 'refund-landed' });
        if (args.hangIn === 'refund') await hang();
        return 'REFUND-RESULT-MARKER';
      },
    },
  },
  store: ops.agentRuns,
  scope: 'support',
  lease: { provider: ops.leases, ttlMs: args.ttlMs },
  leaseRetryMs: 100,
});

type HostEvent =
  | { type: 'REVIEWED'; approvalId: string; token: string; approved: boolean }
  | { type: 'OPERATOR_FOUND'; toolCallId: string; output: string }
  | AgentRunWaitingEvent
  | AgentRunUnsettledEvent;

const ticketMachine = setup({
  types: {
    input: {} as { ticketId: string; text: string },
    context: {} as { ticketId: string; text: string; reply: string | null },
    events: {} as HostEvent,
  },
  actors: { refundAgent },
}).createMachine({
  id: 'ticket',
  context: ({ input }) => ({ ...input, reply: null }),
  initial: 'handling',
  states: {
    handling: {
      invoke: {
        id: 'agent',
        src: 'refundAgent',
        input: ({ context }) => ({ runId: `ticket-${context.ticketId}`, prompt: context.text }),
        onDone: [
          {
            guard: ({ event }) => event.output.status === 'completed',
            target: 'answered',
            actions: assign({ reply: ({ event }) => (event.output.status === 'completed' ? event.output.output : null) }),
          },
          { target: 'escalated' },
        ],
        onError: 'escalated',
      },
      initial: 'working',
      on: { 'cairn.waiting': '.awaitingApproval', 'cairn.unsettled': '.needsOperator' },
      states: {
        working: {},
        awaitingApproval: {
          on: {
            REVIEWED: {
              target: 'working',
              actions: sendTo('agent', ({ event }) => ({
                type: 'cairn.verdict' as const, approvalId: event.approvalId, token: event.token, approved: event.approved,
              })),
            },
          },
        },
        needsOperator: {
          on: {
            OPERATOR_FOUND: {
              target: 'working',
              actions: sendTo('agent', ({ event }) => ({
                type: 'cairn.settle' as const, reconciledToolResults: [{ toolCallId: event.toolCallId, output: event.output }],
              })),
            },
          },
        },
      },
    },
    answered: { type: 'final' },
    escalated: { type: 'final' },
  },
});

const input = { ticketId: '4711', text: 'My mug (order A-17) arrived broken.' };
// The child's own changes (its first save behind it, a leg carrying answers) make no host transition:
// the inspection stream sees every actor's snapshot, so the file follows those too.
const inspect = (event: { type: string }) => {
  if (event.type === '@xstate.snapshot' && started) persist();
};
let started = false;
const host = args.mode === 'start'
  ? createActor(ticketMachine, { input, inspect })
  : createActor(ticketMachine, { input, inspect, snapshot: JSON.parse(readFileSync(args.snapshotFile, 'utf8')) });

/** The host's checkpoint. */
function persist() {
  const json = JSON.stringify(host.getPersistedSnapshot());
  writeFileSync(`${args.snapshotFile}.tmp`, json);
  renameSync(`${args.snapshotFile}.tmp`, args.snapshotFile);
  appendFileSync(`${args.snapshotFile}.log`, `${json}\n`);
}

const childContext = (s: SnapshotFrom<typeof ticketMachine>) => s.children.agent?.getSnapshot().context;
let approved = false;
let settled = false;

host.subscribe({
  next(snapshot) {
    // Written before anything that follows from this change is said.
    persist();
    say({ event: 'state', value: snapshot.value });
    const child = childContext(snapshot);
    if (snapshot.matches({ handling: 'awaitingApproval' }) && child && child.pendingApprovals.length > 0) {
      say({ event: 'waiting', approvals: child.pendingApprovals.length });
      const [pending] = child.pendingApprovals;
      if (args.approve && !approved) {
        approved = true;
        queueMicrotask(() => host.send({ type: 'REVIEWED', approvalId: pending!.approvalId, token: pending!.token, approved: true }));
      }
    }
    if (snapshot.matches({ handling: 'needsOperator' }) && child && !settled) {
      // The operator looks in the payment ledger: the refund landed, so it is recorded, not run again.
      settled = true;
      const landed = readFileSync(args.ledger, 'utf8').split('\n').includes('refund A-17 20');
      say({ event: 'unsettled', unknownEffects: child.unknownEffects.map((e) => e.toolCallId), landed });
      for (const effect of child.unknownEffects) {
        queueMicrotask(() => host.send({ type: 'OPERATOR_FOUND', toolCallId: effect.toolCallId, output: landed ? 'refunded' : 'not refunded' }));
      }
    }
    if (snapshot.status === 'done') {
      say({ event: 'done', value: snapshot.value, reply: snapshot.context.reply });
      ops.close();
      process.exit(0);
    }
  },
  error(error) {
    say({ event: 'host-error', message: String(error) });
    process.exit(1);
  },
});
started = true;
host.start();

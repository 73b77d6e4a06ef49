// A support-ticket workflow of the host invokes an agent run, waits in its own state for a person's approval, and goes on with the run's output.
import { createInMemoryAgentRunStore } from 'cairn/agent';
import { agentRunLogic, type AgentRunWaitingEvent } from 'cairn/embed';
import { createMockModel } from 'cairn/testing';
import { assign, createActor, sendTo, setup, type SnapshotFrom } from 'xstate';

const refunds: string[] = [];
const store = createInMemoryAgentRunStore();

const refundAgent = agentRunLogic({
  model: createMockModel({
    responses: [
      { toolCalls: [{ toolName: 'lookupOrder', args: { orderId: 'A-17' } }] },
      { toolCalls: [{ toolName: 'refund', args: { orderId: 'A-17', amount: 20 } }] },
      { text: 'We refunded 20 EUR for order A-17. Sorry about the broken mug!' },
    ],
  }),
  system: 'You handle support tickets. Refunds need a person to approve them.',
  tools: {
    lookupOrder: {
      parameters: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
      execute: ({ orderId }: { orderId: string }) => ({ orderId, paid: 20, item: 'mug', status: 'delivered broken' }),
    },
    refund: {
      parameters: {
        type: 'object', properties: { orderId: { type: 'string' }, amount: { type: 'number' } }, required: ['orderId', 'amount'],
      },
      needsApproval: true,
      execute: ({ orderId, amount }: { orderId: string; amount: number }) => {
        refunds.push(`${orderId}: ${amount} EUR`);
        return 'refunded';
      },
    },
  },
  store,
  scope: 'support',
});

type Review = { type: 'REVIEWED'; approvalId: string; token: string; approved: boolean; reviewer: string };

const ticketMachine = setup({
  types: {
    input: {} as { ticketId: string; text: string },
    context: {} as { ticketId: string; text: string; reply: string | null; reviewer: string | null },
    events: {} as Review | AgentRunWaitingEvent,
  },
  actors: { refundAgent },
}).createMachine({
  id: 'ticket',
  context: ({ input }) => ({ ...input, reply: null, reviewer: null }),
  initial: 'handling',
  states: {
    handling: {
      // The run is a child of this state: its id in the store comes from the ticket.
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
      states: {
        working: {},
        awaitingApproval: {
          on: {
            // The person's verdict goes to the run; the workflow goes back to work.
            REVIEWED: {
              target: 'working',
              actions: [
                assign({ reviewer: ({ event }) => event.reviewer }),
                sendTo('agent', ({ event }) => ({
                  type: 'cairn.verdict' as const, approvalId: event.approvalId, token: event.token, approved: event.approved,
                })),
              ],
            },
          },
        },
      },
      // Sent by the run whenever it waits, again after a restore.
      on: { 'cairn.waiting': '.awaitingApproval' },
    },
    answered: { type: 'final' },
    escalated: { type: 'final' },
  },
});

type Ticket = SnapshotFrom<typeof ticketMachine>;
const until = (actor: ReturnType<typeof createActor<typeof ticketMachine>>, ready: (s: Ticket) => boolean) =>
  new Promise<Ticket>((resolve) => {
    const check = (s: Ticket) => ready(s) && (sub.unsubscribe(), resolve(s));
    const sub = actor.subscribe(check);
    check(actor.getSnapshot());
  });
/** What the run waits for, from the child's live snapshot (never persisted). */
const pendingOf = (s: Ticket) => s.children.agent?.getSnapshot().context.pendingApprovals ?? [];

const input = { ticketId: '4711', text: 'My mug (order A-17) arrived broken.' };
const ticket = createActor(ticketMachine, { input }).start();
await until(ticket, (s) => s.matches({ handling: 'awaitingApproval' }) && pendingOf(s).length > 0);
const [request] = pendingOf(ticket.getSnapshot());
console.log(`ticket: ${JSON.stringify(ticket.getSnapshot().value)}, the run asks to ${request!.toolName} ${JSON.stringify(request!.args)}`);

// The host persists its own snapshot and goes down; the run's child keeps only its identity and where it stands.
const saved = JSON.stringify(ticket.getPersistedSnapshot());
ticket.stop();
const child = (JSON.parse(saved) as { children: { agent: { snapshot: unknown } } }).children.agent.snapshot;
console.log(`the host's snapshot of the run: ${JSON.stringify(child)}`);

// Later (another process, the same store): the restored child reads its run and says again what it waits for.
// (XState's types ask for the input here too; a restore does not use it.)
const restored = createActor(ticketMachine, { snapshot: JSON.parse(saved), input }).start();
const waiting = await until(restored, (s) => pendingOf(s).length > 0);
const [again] = pendingOf(waiting);
console.log(`restored: ${JSON.stringify(waiting.value)}, still waiting for ${again!.approvalId === request!.approvalId ? 'the same' : 'another'} approval`);
restored.send({ type: 'REVIEWED', approvalId: again!.approvalId, token: again!.token, approved: true, reviewer: 'maria' });

const end = await until(restored, (s) => s.status === 'done');
console.log(`ticket: ${JSON.stringify(end.value)}, approved by ${end.context.reviewer}`);
console.log(`reply: ${end.context.reply}`);
console.log(`refunds: ${refunds.join(', ')}`);

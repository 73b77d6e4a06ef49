// An idempotent tool keys its write on [modelStep, toolCallId], so running it again adds nothing.
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentRunStore } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const board = new Map<string, string>();
let executions = 0;

// A store that loses one write: the one that would record the note's result.
const durable = createInMemoryAgentRunStore();
let failOnce = true;
const flaky: AgentRunStore = {
  load: (runId) => durable.load(runId),
  async save(envelope) {
    const recordsResult = Object.values(envelope.receipts).some((receipt) => receipt.status === 'executed');
    if (failOnce && recordsResult) {
      failOnce = false;
      throw new Error('disk full');
    }
    await durable.save(envelope);
  },
};

const model = createMockModel({
  responses: [
    { toolCalls: [{ toolName: 'note', args: { text: 'checked the invoices' } }] },
    { text: 'Noted.' },
  ],
});

const optionsWith = (store: AgentRunStore) => ({
  model,
  prompt: 'Leave a note on the board.',
  session: { store, runId: 'notes-1', scope: 'tenant-a' },
  tools: {
    note: {
      description: 'Append a note to the shared board.',
      parameters: {
        type: 'object' as const,
        properties: { text: { type: 'string' } },
        required: ['text'],
      },
      replay: 'idempotent' as const,
      execute: ({ text }: { text: string }, ctx: { toolCallId: string; modelStep: number }) => {
        executions += 1;
        // Both parts of the key are the same when the call runs again on resume.
        board.set(`${ctx.modelStep}:${ctx.toolCallId}`, text);
        return 'noted';
      },
    },
  },
});

const first = await runAgent(optionsWith(flaky));
console.log(`first leg: ${first.status} (${first.status === 'failed' ? first.error.code : ''})`);

// The stored record says the note started and nothing more: its outcome is unknown.
// The tool is idempotent, so the resume runs it again instead of stopping for reconciliation.
const second = await resumeAgent(optionsWith(durable));
console.log(`resume: ${second.status}: ${second.text}`);
console.log(`note executions: ${executions}, notes on the board: ${board.size}`);
console.log([...board.entries()].map(([key, text]) => `${key} ${text}`).join('\n'));

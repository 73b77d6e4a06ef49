// An idempotent tool keys its write on [modelStep, toolCallId], so running it again adds nothing.
import { createInMemoryAgentRunStore, resumeAgent, runAgent, type AgentRunStore } from 'cairn/agent';
import { createFaultyStore, createMockModel } from 'cairn/testing';

const board = new Map<string, string>();
let executions = 0;

const optionsWith = (store: AgentRunStore) => ({
  model: createMockModel({
    strict: false,
    responses: [
      (request) =>
        request.messages.some((m) => m.role === 'tool')
          ? { text: 'Noted.' }
          : { toolCalls: [{ toolName: 'note', args: { text: 'checked the invoices' } }] },
    ],
  }),
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

// The saves of a one-call step are: the start, the `executing` receipt (with the
// model's turn), then the step's checkpoint, which records the note's result. That third one fails.
const disk = createInMemoryAgentRunStore();
const first = await runAgent(optionsWith(createFaultyStore(disk, { failSave: { at: 3, mode: 'reject' } })));
console.log(`first leg: ${first.status} (${first.status === 'failed' ? first.error.code : ''})`);
console.log(`stored receipt: ${Object.values((await disk.load('notes-1'))!.receipts).map((r) => `${r.status}, idempotent: ${r.idempotent}`).join('')}`);

// The record says the note started and nothing more. The tool is idempotent, so the
// resume runs it again by itself instead of stopping for reconciliation.
const second = await resumeAgent(optionsWith(disk));
console.log(`resume: ${second.status}: ${second.text}`);
console.log(`note executions: ${executions}, notes on the board: ${board.size}`);
console.log([...board.entries()].map(([key, text]) => `${key} ${text}`).join('\n'));

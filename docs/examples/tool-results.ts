// A result the receipt cannot store is recorded as run, never as a failure; a long one is cut for the model.
import { createInMemoryAgentRunStore, runAgent } from 'cairn/agent';
import { createMockModel } from 'cairn/testing';

const store = createInMemoryAgentRunStore();
let exports = 0;
const model = createMockModel({
  responses: [
    { toolCalls: [{ toolName: 'exportRows', toolCallId: 'x1' }, { toolName: 'readLog', toolCallId: 'r1' }] },
    { text: 'The export ran; the log is long.' },
  ],
});
const result = await runAgent({
  model,
  prompt: 'Export the rows and read the log.',
  session: { store, runId: 'export-3', scope: 'tenant-a' },
  // At most this many characters of one result enter the model's history (default 100000).
  maxToolResultChars: 40,
  tools: {
    exportRows: {
      parameters: { type: 'object' as const },
      execute: () => {
        exports += 1;
        // The export happened; the handle it returns points to itself, so it is not JSON.
        const handle: Record<string, unknown> = { rows: 1200 };
        handle.self = handle;
        return handle;
      },
    },
    readLog: { parameters: { type: 'object' as const }, execute: () => 'line\n'.repeat(20) },
  },
});

for (const m of model.calls[1]!.messages) if (m.role === 'tool') console.log(`${m.toolName}: ${JSON.stringify(m.content)}`);
for (const w of result.warnings) console.log(`warning (${w.setting}, ${w.toolCallId}): ${w.message}`);
const receipts = (await store.load('export-3'))!.receipts;
console.log(`receipt x1: ${receipts['0:x1']!.status} (${receipts['0:x1']!.error!.code}); receipt r1 keeps ${String(receipts['0:r1']!.rawResult).length} characters`);
console.log(`${result.status}; exports run: ${exports}`);

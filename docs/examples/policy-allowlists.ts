// An execution context that allows one tool: a call to any other fails the run before anything in its batch starts.
import { runAgent } from 'cairn/agent';
import { createExecutionContext } from 'cairn/policy';
import { createMockModel } from 'cairn/testing';

const ran: string[] = [];
const tool = (name: string) => ({
  description: name,
  parameters: { type: 'object', properties: {} },
  execute: () => {
    ran.push(name);
    return 'ok';
  },
});

const execution = createExecutionContext({ allowedTools: ['search'], allowedModels: ['mock:*'] });
const result = await runAgent({
  model: createMockModel({
    responses: [{ toolCalls: [{ toolCallId: 'c1', toolName: 'search', args: {} }, { toolCallId: 'c2', toolName: 'deploy', args: {} }] }],
  }),
  prompt: 'Search, then deploy.',
  tools: { search: tool('search'), deploy: tool('deploy') },
  execution,
});
if (result.status === 'failed') console.log(result.error.code, result.error.toolCallId);
console.log('tools that ran:', ran.length);

// A child only narrows: asking for a tool the parent does not allow throws before any run.
try {
  execution.child({ allowedTools: ['search', 'deploy'] });
} catch (error) {
  console.log((error as { code: string }).code);
}
